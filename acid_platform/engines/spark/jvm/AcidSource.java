/*
 * acid_platform: format("acid") as a JVM data source (see catalog.py).
 *
 * spark.read.format("acid").load("db.t") (or load(<the table's warehouse path>)) reads through
 * the AcidTable a table read by name gives (AcidCatalog.java): its scans (AcidScans.java) prune
 * columns and partitions per query and report the table's size, so a small table is broadcast.
 * Everything else the format does is the acid Python data source's, registered under an
 * internal name (spark.sql.catalog.spark_catalog.source) and handed the call unchanged: writes
 * (Spark gives a write the DataFrame's schema: getTable without inferSchema), streaming sinks
 * (the same), reads with a user schema, and reads whose schema is not the table's (read_changes,
 * with_row_id) or that push filters into a pinned reader (pushdown). Registered under the
 * format's name (META-INF/services) only while that setting is on; otherwise it matches no name.
 */
package acid_platform.spark;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public final class AcidSource implements TableProvider, DataSourceRegister {
  /** Options that keep a read on the Python data source's own table. */
  private static final String[] PYTHON_READS = {
    "read_changes", "with_row_id", "pushdown", AcidCatalog.OP
  };

  /** The Python data source (one instance per lookup, as Spark's own lookup gives). */
  private TableProvider python;
  /** The table's "load" answer, when inferSchema found it. */
  private StructType described;
  /** The schema inferSchema answered for it. */
  private StructType inferred;

  @Override
  public String shortName() {
    return AcidCatalog.sourceOn() ? AcidCatalog.format() : AcidSource.class.getName();
  }

  private TableProvider python() {
    if (python == null) {
      python = AcidCatalog.provider();
    }
    return python;
  }

  /** Writes and streams get the DataFrame's schema: they never reach inferSchema. */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    if (tableRead(options)) {
      Map<String, String> opts = new HashMap<>(options.asCaseSensitiveMap());
      opts.put(AcidCatalog.OP, "load");
      StructType answer = AcidCatalog.provider().inferSchema(new CaseInsensitiveStringMap(opts));
      if (answer.fields().length > 0) {
        described = answer;
        inferred = AcidCatalog.AcidTable.columnsOf(answer);
        return inferred;
      }
    }
    return python().inferSchema(options);
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (described != null && schema == inferred) {
      return new AcidCatalog.AcidTable(
          AcidCatalog.AcidTable.nameOf(described), described, python(), null);
    }
    return python().getTable(schema, partitioning, properties);
  }

  private static boolean tableRead(CaseInsensitiveStringMap options) {
    for (String key : PYTHON_READS) {
      if (options.containsKey(key) && !"false".equalsIgnoreCase(options.get(key))) {
        return false;
      }
    }
    return true;
  }
}
