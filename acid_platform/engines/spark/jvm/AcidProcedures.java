/*
 * acid_platform: the warehouse's maintenance as Spark procedures (see maintenance.py).
 *
 *   CALL system.compact(table => 'db.t', type => 'major', partition => 'ds=1', wait => true)
 *   CALL system.show_compactions()
 *
 * The session catalog (AcidCatalog) is Spark's ProcedureCatalog for the namespace "system".
 * Like every catalog operation, a procedure does no warehouse work itself: it calls the Python
 * data source's schema() with a "_catalog_op" option (AcidCatalog.call), whose answer is the
 * result's columns, with its rows (JSON) or a one-line error in the first column's metadata.
 */
package acid_platform.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.SimpleProcedure;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

final class AcidProcedures {
  /** The procedures' namespace: CALL [spark_catalog.]system.name(...). */
  static final String NAMESPACE = "system";
  /** Argument names of a procedure travel as options "_arg_<name>" (absent when NULL). */
  static final String ARG = "_arg_";

  private static final ObjectMapper JSON = new ObjectMapper();

  private AcidProcedures() {}

  private static final Map<String, Procedure> ALL = Map.of(
      "compact",
      new Procedure(
          "compact",
          "ALTER TABLE t [PARTITION (...)] COMPACT 'type' [AND WAIT] [POOL 'p']: queue (and with "
              + "wait => true run) a compaction; returns its SHOW COMPACTIONS rows",
          new ProcedureParameter[] {
            ProcedureParameter.in("table", DataTypes.StringType).build(),
            ProcedureParameter.in("type", DataTypes.StringType).defaultValue("'major'").build(),
            ProcedureParameter.in("partition", DataTypes.StringType).defaultValue("NULL").build(),
            ProcedureParameter.in("wait", DataTypes.BooleanType).defaultValue("false").build(),
            ProcedureParameter.in("pool", DataTypes.StringType).defaultValue("NULL").build(),
          }),
      "show_compactions",
      new Procedure(
          "show_compactions",
          "SHOW COMPACTIONS: the compaction queue and history, with Hive's columns",
          new ProcedureParameter[] {
            ProcedureParameter.in("table", DataTypes.StringType).defaultValue("NULL").build(),
          }));

  /** The procedure of that name in "system" (Spark's ROUTINE_NOT_FOUND if none); {@code
   * sparkTable} tells whether a table ("db.t") is one of Spark's own, not the warehouse's. */
  static UnboundProcedure load(Identifier ident, Predicate<String> sparkTable) {
    String[] ns = ident.namespace();
    Procedure p = ns.length == 1 && ns[0].equalsIgnoreCase(NAMESPACE)
        ? ALL.get(ident.name().toLowerCase())
        : null;
    if (p == null) {
      String name = String.join(".", ns) + (ns.length == 0 ? "" : ".") + ident.name();
      throw AcidProcedures.<RuntimeException>unchecked(new AnalysisException(
          "ROUTINE_NOT_FOUND",
          scala.collection.immutable.Map$.MODULE$.<String, String>empty()
              .updated("routineName", "`" + name + "`")));
    }
    return new Procedure(p.name, p.description, p.parameters, sparkTable);
  }

  /** Spark's analysis error (checked, in Java's eyes) thrown as it is. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E unchecked(Throwable e) throws E {
    throw (E) e;
  }

  static Identifier[] list(String[] namespace) {
    if (namespace.length != 1 || !namespace[0].equalsIgnoreCase(NAMESPACE)) {
      return new Identifier[0];
    }
    return ALL.keySet().stream()
        .sorted()
        .map(n -> Identifier.of(new String[] {NAMESPACE}, n))
        .toArray(Identifier[]::new);
  }

  /** A procedure whose work is the catalog operation of its name. */
  static final class Procedure implements SimpleProcedure {
    private final String name;
    private final String description;
    private final ProcedureParameter[] parameters;
    private final Predicate<String> sparkTable;

    Procedure(String name, String description, ProcedureParameter[] parameters) {
      this(name, description, parameters, t -> false);
    }

    Procedure(String name, String description, ProcedureParameter[] parameters,
        Predicate<String> sparkTable) {
      this.name = name;
      this.description = description;
      this.parameters = parameters;
      this.sparkTable = sparkTable;
    }

    @Override public String name() { return name; }
    @Override public String description() { return description; }
    @Override public ProcedureParameter[] parameters() { return parameters; }
    @Override public boolean isDeterministic() { return false; }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      Map<String, String> args = new HashMap<>();
      String table = "default._";
      for (int i = 0; i < parameters.length; i++) {
        if (input.isNullAt(i)) {
          continue;
        }
        DataType type = parameters[i].dataType();
        String value = type.equals(DataTypes.BooleanType)
            ? String.valueOf(input.getBoolean(i))
            : input.getUTF8String(i).toString();
        args.put(ARG + parameters[i].name(), value);
        if (parameters[i].name().equals("table")) {
          table = value;
        }
      }
      if (name.equals("compact") && sparkTable.test(table)) { // Hive's message, nothing queued
        throw new IllegalArgumentException(
            "UnsupportedOperationError: Compaction is not allowed on non-ACID table "
                + (table.contains(".") ? table : "default." + table).toLowerCase());
      }
      StructType answer = AcidCatalog.call(table, name, args);
      return List.<Scan>of(result(answer)).iterator();
    }
  }

  /** The answer's rows as a local scan, or its error thrown (one line). */
  static Scan result(StructType answer) {
    Metadata first = answer.fields()[0].metadata();
    if (first.contains("acid_error")) {
      throw new IllegalArgumentException(first.getString("acid_error"));
    }
    StructType schema = AcidCatalog.AcidTable.columnsOf(answer);
    List<InternalRow> rows = new ArrayList<>();
    try {
      for (JsonNode row : JSON.readTree(first.getString("acid_rows"))) {
        Object[] values = new Object[schema.fields().length];
        for (int i = 0; i < values.length; i++) {
          values[i] = value(row.get(i), schema.fields()[i].dataType());
        }
        rows.add(new GenericInternalRow(values));
      }
    } catch (java.io.IOException e) {
      throw new IllegalStateException("acid procedure: unreadable answer", e);
    }
    InternalRow[] out = rows.toArray(new InternalRow[0]);
    return new LocalScan() {
      @Override public InternalRow[] rows() { return out; }
      @Override public StructType readSchema() { return schema; }
    };
  }

  /** A JSON value as Spark's internal value: strings, longs, booleans and timestamps
   * (microseconds since the epoch). */
  private static Object value(JsonNode node, DataType type) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (type.equals(DataTypes.StringType)) {
      return UTF8String.fromString(node.asText());
    }
    if (type.equals(DataTypes.BooleanType)) {
      return node.asBoolean();
    }
    return node.asLong(); // LongType and TimestampType
  }
}
