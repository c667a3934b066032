/*
 * acid_platform: the scans of a warehouse table read by name or loaded with format("acid")
 * (see AcidCatalog.java, AcidSource.java, catalog.py).
 *
 * Spark builds a ScanBuilder per scan of every query: Builder takes that query's required
 * columns and its conjuncts on partition columns, and build() plans a read of its own — a
 * PythonTable of a new instance of the acid Python data source, whose schema is the pruned one
 * and whose options carry the partition conjuncts — so nothing one query pushed can reach
 * another query's read (the Python data source's planned reader is kept per provider
 * instance). Every predicate is still evaluated by Spark after the scan: the conjuncts only
 * skip partitions. The Scan reports the bytes of the files the table's latest snapshot reads
 * in the remaining partitions (scaled to the columns read, as Spark's file sources do), so
 * Spark broadcasts a small table.
 */
package acid_platform.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.HashMap;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

final class AcidScans {
  /** Option carrying a scan's partition conjuncts to the Python reader (JSON). */
  static final String PARTITION_FILTER = "_partition_filter";
  /** Option naming the columns the Python reader sends as unscaled longs (see Builder). */
  static final String UNSCALED = "_unscaled_decimals";
  /** Options whose reads have another schema than the table's: planned as Spark plans them. */
  private static final String[] OTHER_SCHEMA = {"read_changes", "with_row_id"};

  private AcidScans() {}

  static final class Builder
      implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownV2Filters {
    private final String table;
    private final StructType schema;
    private final Set<String> partitionColumns;
    private final CaseInsensitiveStringMap options;
    private StructType required;
    private final List<String> conjuncts = new ArrayList<>();
    private final List<Predicate> pushed = new ArrayList<>();

    Builder(String table, StructType schema, Set<String> partitionColumns,
        CaseInsensitiveStringMap options) {
      this.table = table;
      this.schema = schema;
      this.required = schema;
      this.partitionColumns = partitionColumns;
      this.options = options;
    }

    private boolean otherSchema() {
      for (String key : OTHER_SCHEMA) {
        if ("true".equalsIgnoreCase(options.getOrDefault(key, "false"))) {
          return true;
        }
      }
      return false;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      if (!otherSchema()) {
        required = requiredSchema;
      }
    }

    /** Keeps the conjuncts that name partitions; Spark evaluates every one after the scan. */
    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
      for (Predicate p : predicates) {
        String json = partitionConjunct(p);
        if (json != null) {
          conjuncts.add(json);
          pushed.add(p);
        }
      }
      return predicates;
    }

    @Override
    public Predicate[] pushedPredicates() {
      return pushed.toArray(new Predicate[0]);
    }

    @Override
    public Scan build() {
      Map<String, String> opts = new HashMap<>(options.asCaseSensitiveMap());
      if (!conjuncts.isEmpty()) {
        opts.put(PARTITION_FILTER, "[" + String.join(",", conjuncts) + "]");
      }
      StructType python = required;
      if (!otherSchema()) {
        List<String> unscaled = new ArrayList<>();
        python = unscaledDecimals(required, unscaled);
        if (!unscaled.isEmpty()) {
          opts.put(UNSCALED, String.join(",", unscaled));
        }
      }
      // a new provider instance per scan: its Python reader serves this scan only
      Table reads = AcidCatalog.provider().getTable(python, new Transform[0], Map.of());
      CaseInsensitiveStringMap scanOptions = new CaseInsensitiveStringMap(opts);
      Scan inner = ((SupportsRead) reads).newScanBuilder(scanOptions).build();
      return new AcidScan(table, inner, required, scanOptions, fraction(), pushed);
    }

    /**
     * The schema the Python reader is asked for: each decimal of at most 18 digits as a long,
     * its unscaled value (names added to {@code unscaled}). Spark's reader of a Python data
     * source turns every value into an UnsafeRow, where such a decimal is stored as exactly
     * that long (UnsafeRow.getDecimal: Decimal.createUnsafe(getLong)), so the rows read as the
     * table's decimals, without a BigDecimal made per value from Arrow's decimal128. Read from
     * the 4.0.1 and 4.3.0 jars: PythonPartitionReaderFactory runs MapInBatchEvaluatorFactory,
     * whose every row goes through an UnsafeProjection (the pin is pyspark < 4.4).
     */
    private static StructType unscaledDecimals(StructType schema, List<String> unscaled) {
      StructField[] fields = schema.fields().clone();
      for (int i = 0; i < fields.length; i++) {
        DataType t = fields[i].dataType();
        if (t instanceof DecimalType && ((DecimalType) t).precision() <= Decimal.MAX_LONG_DIGITS()) {
          StructField f = fields[i];
          fields[i] = new StructField(f.name(), DataTypes.LongType, f.nullable(), f.metadata());
          unscaled.add(f.name().toLowerCase());
        }
      }
      return unscaled.isEmpty() ? schema : new StructType(fields);
    }

    /** The share of the row's bytes the scan reads (Spark's default sizes of the types). */
    private double fraction() {
      int all = schema.defaultSize();
      return all <= 0 ? 1.0 : Math.min(1.0, (double) required.defaultSize() / all);
    }

    /** ["column", "op", "kind", [values]] for a comparison of a partition column with
     * literals of a type the reader compares exactly (string, integers, date); else null. */
    private String partitionConjunct(Predicate p) {
      String op = p.name();
      Expression[] args = p.children();
      boolean in = op.equals("IN");
      if (!in && !(op.equals("=") || op.equals("<=>") || op.equals("<") || op.equals("<=")
          || op.equals(">") || op.equals(">=")) || args.length < 2) {
        return null;
      }
      if (!(args[0] instanceof NamedReference)) {
        if (in || args.length != 2 || !(args[1] instanceof NamedReference)) {
          return null;
        }
        args = new Expression[] {args[1], args[0]};
        op = flipped(op);
      }
      String[] names = ((NamedReference) args[0]).fieldNames();
      if (names.length != 1 || !partitionColumns.contains(names[0].toLowerCase())) {
        return null;
      }
      String kind = null;
      List<String> values = new ArrayList<>();
      for (int i = 1; i < args.length; i++) {
        if (!(args[i] instanceof Literal) || ((Literal<?>) args[i]).value() == null) {
          return null;
        }
        Literal<?> lit = (Literal<?>) args[i];
        String k = kind(lit.dataType());
        if (k == null || (kind != null && !kind.equals(k))) {
          return null;
        }
        kind = k;
        values.add(k.equals("string") ? quoted(lit.value().toString()) : lit.value().toString());
      }
      String name = op.equals("<=>") ? "=" : in ? "in" : op;
      return "[" + quoted(names[0].toLowerCase()) + "," + quoted(name) + "," + quoted(kind) + ",["
          + String.join(",", values) + "]]";
    }

    private static String flipped(String op) {
      switch (op) {
        case "<": return ">";
        case "<=": return ">=";
        case ">": return "<";
        case ">=": return "<=";
        default: return op;
      }
    }

    private static String kind(DataType t) {
      if (t instanceof StringType) {
        return "string";
      }
      if (t instanceof IntegerType || t instanceof LongType || t instanceof ShortType
          || t instanceof ByteType) {
        return "int";
      }
      if (t instanceof DateType) {
        return "date"; // days since 1970-01-01
      }
      return null;
    }

    static String quoted(String s) {
      StringBuilder out = new StringBuilder("\"");
      for (char c : s.toCharArray()) {
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      return out.append('"').toString();
    }
  }

  /** The Python data source's scan, with this scan's size and pushed partition conjuncts. */
  static final class AcidScan implements Scan, SupportsReportStatistics {
    private final String table;
    private final Scan inner;
    private final StructType schema;
    private final CaseInsensitiveStringMap options;
    private final double fraction;
    private final List<Predicate> pushed;
    private Long bytes;

    AcidScan(String table, Scan inner, StructType schema, CaseInsensitiveStringMap options,
        double fraction, List<Predicate> pushed) {
      this.table = table;
      this.inner = inner;
      this.schema = schema;
      this.options = options;
      this.fraction = fraction;
      this.pushed = pushed;
    }

    /** The table's types (the inner scan may read decimals as their unscaled longs). */
    @Override public StructType readSchema() { return schema; }
    @Override public Batch toBatch() { return inner.toBatch(); }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return inner.toMicroBatchStream(checkpointLocation);
    }

    @Override public CustomMetric[] supportedCustomMetrics() { return inner.supportedCustomMetrics(); }
    @Override public CustomTaskMetric[] reportDriverMetrics() { return inner.reportDriverMetrics(); }

    @Override
    public String description() {
      return "acid table " + table + " PartitionFilters: " + pushed;
    }

    @Override
    public Statistics estimateStatistics() {
      if (bytes == null) {
        // the scan's options: its partition conjuncts, and the warehouse it reads
        StructField answer =
            AcidCatalog.call(table, "stats", options.asCaseSensitiveMap()).fields()[0];
        long size = answer.metadata().getLong("acid_bytes");
        bytes = Math.max(1L, (long) Math.ceil(size * fraction));
      }
      long size = bytes;
      return new Statistics() {
        @Override public OptionalLong sizeInBytes() { return OptionalLong.of(size); }
        @Override public OptionalLong numRows() { return OptionalLong.empty(); }
      };
    }
  }
}
