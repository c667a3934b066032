/*
 * acid_platform: DELETE / UPDATE / MERGE INTO in Spark SQL on the warehouse's tables (see
 * row_level.py for the design and the why).
 *
 * AcidTable is a SupportsRowLevelOperations table whose operation is SupportsDelta: rowId() is
 * Hive's ROW__ID as three metadata columns (_acid_writeid, _acid_bucketid, _acid_rowid) and an
 * update is a delete plus an insert (Hive's split update), so Spark's own analyser and rewrite
 * rules (RewriteDeleteFromTable, RewriteUpdateTable, RewriteMergeIntoTable) turn every statement
 * Spark SQL accepts - subqueries, joins, every MERGE clause, MERGE's cardinality check - into a
 * WriteDelta over one scan of the target. Spark would write that plan with a JVM DeltaWriter,
 * row by row; a Python data source's writer takes a whole task's rows at once (Spark runs it as
 * a mapInArrow-like step). So the Strategy below, put first among the session's planner
 * strategies, plans a WriteDelta on an acid table as an append of the labelled rows
 * (__row_operation, the table's columns, ROW__ID, the partition values of deleted rows) through
 * the acid Python data source's writer in its row-level mode (option _row_level), the rows
 * shuffled so that each (partition, bucket) of deleted rows - and of a bucketed table's new
 * rows, by Hive's bucket hash (AcidBuckets) - has one writer, and sorted by ROW__ID. The
 * DeltaWrite Spark builds is never run. A statement the analyser rule of
 * AcidRowLevelMetrics.java put in place of the WriteDelta is planned the same way, the append
 * wrapped in an exec that returns the committed statement's counts.
 */
package acid_platform.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BitwiseAnd;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Murmur3Hash;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.ShiftRight;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.plans.logical.WriteDelta;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationTable;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.datasources.v2.AppendDataExec;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

final class AcidRowLevel {
  /** The Python data source's option naming a row-level write (its value: the command). */
  static final String ROW_LEVEL = "_row_level";
  static final String WRITE_ID = "_acid_writeid";
  static final String BUCKET_ID = "_acid_bucketid";
  static final String ROW_ID = "_acid_rowid";
  /** A deleted row's value of partition column c: metadata column PARTITION + c. */
  static final String PARTITION = "_acid_p_";
  private static final String OPERATION = "__row_operation";
  /** Hive's bucket codec version 1 (statement id in the bucket property). */
  private static final int CODEC_V1 = 1 << 29;

  private AcidRowLevel() {}

  /** Put the Strategy first among the session's planner strategies (once). */
  static void install() {
    scala.Option<org.apache.spark.sql.classic.SparkSession> active =
        org.apache.spark.sql.classic.SparkSession.getActiveSession();
    scala.Option<org.apache.spark.sql.classic.SparkSession> session =
        active.isDefined() ? active : org.apache.spark.sql.classic.SparkSession.getDefaultSession();
    if (session.isEmpty()) {
      return;
    }
    org.apache.spark.sql.ExperimentalMethods methods = session.get().experimental();
    List<SparkStrategy> strategies =
        new ArrayList<>(CollectionConverters.asJava(methods.extraStrategies()));
    for (SparkStrategy s : strategies) {
      if (s instanceof Planner) {
        AcidRowLevelMetrics.install(session.get());
        return;
      }
    }
    strategies.add(0, new Planner());
    methods.extraStrategies_$eq(CollectionConverters.asScala(strategies).toSeq());
    AcidRowLevelMetrics.install(session.get()); // the statements' result rows
  }

  /** The metadata columns of a table with these partition columns. */
  static MetadataColumn[] metadataColumns(StructType schema, List<String> partitionColumns) {
    List<MetadataColumn> out = new ArrayList<>();
    out.add(column(WRITE_ID, DataTypes.LongType, false));
    out.add(column(BUCKET_ID, DataTypes.IntegerType, false));
    out.add(column(ROW_ID, DataTypes.LongType, false));
    for (String c : partitionColumns) {
      out.add(column(PARTITION + c, schema.apply(c).dataType(), true));
    }
    return out.toArray(new MetadataColumn[0]);
  }

  private static MetadataColumn column(String name, DataType type, boolean nullable) {
    return new MetadataColumn() {
      @Override public String name() { return name; }
      @Override public DataType dataType() { return type; }
      @Override public boolean isNullable() { return nullable; }
    };
  }

  static RowLevelOperationBuilder builder(
      AcidCatalog.AcidTable table, RowLevelOperation.Command command,
      List<String> partitionColumns) {
    // Hive's ErrorMsg.ACID_OP_ON_NONACID_TABLE / ACID_OP_ON_INSERTONLYTRAN_TABLE
    Map<String, String> props = table.properties();
    if (!"true".equalsIgnoreCase(props.getOrDefault("transactional", "false"))) {
      throw new UnsupportedOperationException("Attempt to do update or delete on table "
          + table.name() + " that is not transactional");
    }
    if ("insert_only".equalsIgnoreCase(props.getOrDefault("transactional_properties", ""))) {
      throw new UnsupportedOperationException("Attempt to do update or delete on table "
          + table.name() + " that is insert-only transactional");
    }
    return () -> new Operation(table, command, partitionColumns);
  }

  /** DELETE / UPDATE / MERGE as a row delta keyed by ROW__ID, updates split. */
  static final class Operation implements SupportsDelta {
    private final AcidCatalog.AcidTable table;
    private final Command command;
    private final List<String> partitionColumns;

    Operation(AcidCatalog.AcidTable table, Command command, List<String> partitionColumns) {
      this.table = table;
      this.command = command;
      this.partitionColumns = partitionColumns;
    }

    @Override public Command command() { return command; }
    @Override public String description() { return command + " acid table " + table.name(); }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return table.newScanBuilder(options);
    }

    @Override
    public NamedReference[] rowId() {
      return new NamedReference[] {
        Expressions.column(WRITE_ID), Expressions.column(BUCKET_ID), Expressions.column(ROW_ID)
      };
    }

    @Override
    public NamedReference[] requiredMetadataAttributes() {
      NamedReference[] out = new NamedReference[partitionColumns.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = Expressions.column(PARTITION + partitionColumns.get(i));
      }
      return out;
    }

    @Override public boolean representUpdateAsDeleteAndInsert() { return true; }

    @Override
    public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new DeltaWriteBuilder() {
        @Override
        public DeltaWrite build() {
          return new DeltaWrite() {
            @Override public String description() { return Operation.this.description(); }
            @Override
            public DeltaBatchWrite toBatch() {
              throw new IllegalStateException(
                  "a row-level write of " + table.name() + " is planned by AcidRowLevel.Planner");
            }
          };
        }
      };
    }
  }

  /** Plans a WriteDelta on an acid table as the Python data source's row-level write; a
   * Statement (AcidRowLevelMetrics) as that write returning its committed metrics. */
  static final class Planner extends SparkStrategy {
    @Override
    public scala.collection.immutable.Seq<SparkPlan> apply(LogicalPlan plan) {
      AcidRowLevelMetrics.Statement statement = null;
      NamedRelation target;
      LogicalPlan query;
      if (plan instanceof AcidRowLevelMetrics.Statement) {
        statement = (AcidRowLevelMetrics.Statement) plan;
        target = statement.table();
        query = statement.query();
      } else if (plan instanceof WriteDelta) {
        target = ((WriteDelta) plan).table();
        query = ((WriteDelta) plan).query();
      } else {
        return empty();
      }
      if (!(target instanceof DataSourceV2Relation)) {
        return empty();
      }
      Table t = ((DataSourceV2Relation) target).table();
      if (!(t instanceof RowLevelOperationTable)
          || !(((RowLevelOperationTable) t).table() instanceof AcidCatalog.AcidTable)) {
        return empty();
      }
      RowLevelOperationTable op = (RowLevelOperationTable) t;
      AcidCatalog.AcidTable table = (AcidCatalog.AcidTable) op.table();
      LogicalPlan labelled = labelled(table, query);
      StructType schema = new StructType();
      for (Attribute a : CollectionConverters.asJava(labelled.output())) {
        schema = schema.add(new StructField(a.name(), a.dataType(), true, Metadata.empty()));
      }
      // the Python data source's commit writes a Statement's metrics to this path
      String metrics = statement == null ? null : AcidRowLevelMetrics.newPath();
      Write write = pythonWrite(
          table.name(), op.operation().command().name(), schema, metrics, table.bucket() != null);
      scala.Function0<BoxedUnit> refresh = () -> BoxedUnit.UNIT;
      SparkPlan exec =
          new AppendDataExec(planLater(labelled), refresh, write, table.name(), scala.Option.empty());
      if (metrics != null) {
        exec = new AcidRowLevelMetrics.Exec(statement.output(), exec, metrics, table.name(),
            SQLConf.get().getConfString(AcidCatalog.TRANSACTION, null));
      }
      return seq(List.of(exec));
    }

    /** The statement's rows: operation, the table's columns, ROW__ID and the deleted rows'
     * partition values; clustered by (partition, bucket) - a deleted row's bucket, a new row's
     * Hive bucket (acid_bucket of the table's bucketing; of a table not bucketed, or bucketed
     * by a type the JVM does not hash, a hash of the row) - and sorted by ROW__ID within each
     * writing task. */
    private static LogicalPlan labelled(AcidCatalog.AcidTable table, LogicalPlan query) {
      Map<String, Attribute> byName = new HashMap<>();
      for (Attribute a : CollectionConverters.asJava(query.output())) {
        byName.putIfAbsent(a.name().toLowerCase(Locale.ROOT), a);
      }
      List<NamedExpression> columns = new ArrayList<>();
      List<Expression> data = new ArrayList<>();
      Map<String, Expression> dataByName = new HashMap<>();
      columns.add(find(byName, OPERATION));
      for (StructField f : table.schema().fields()) {
        // a DELETE's plan has no data columns (Spark nulls them, the optimizer drops them)
        Attribute a = byName.get(f.name().toLowerCase(Locale.ROOT));
        NamedExpression column = a != null ? a : new Alias(
            Literal.create(null, f.dataType()), f.name(), NamedExpression$.MODULE$.newExprId(),
            seq(List.<String>of()), scala.Option.empty(), seq(List.<String>of()));
        columns.add(column);
        data.add(column.toAttribute());
        dataByName.put(f.name().toLowerCase(Locale.ROOT), column.toAttribute());
      }
      Attribute writeId = find(byName, WRITE_ID);
      Attribute bucketId = find(byName, BUCKET_ID);
      Attribute rowId = find(byName, ROW_ID);
      columns.add(writeId);
      columns.add(bucketId);
      columns.add(rowId);
      List<Expression> keys = new ArrayList<>();
      for (String c : table.partitionColumnNames()) {
        Attribute deleted = find(byName, PARTITION + c);
        columns.add(deleted);
        Attribute inserted = byName.get(c.toLowerCase(Locale.ROOT));
        keys.add(inserted == null ? deleted : new Coalesce(seq(List.of(deleted, inserted))));
      }
      // a deleted row's writer: its (decoded) bucket; a new row's: its Hive bucket (each bucket
      // file of new rows has one writer), or of a table not bucketed by the JVM, its values
      Expression decoded = new If(
          new GreaterThanOrEqual(bucketId, lit(CODEC_V1)),
          new BitwiseAnd(new ShiftRight(bucketId, lit(16)), lit(4095)),
          bucketId);
      Expression inserted = table.bucket() == null
          ? new Murmur3Hash(seq(data))
          : AcidBuckets.catalyst(table.bucket(), c -> dataByName.get(c.toLowerCase(Locale.ROOT)));
      keys.add(new If(new IsNull(bucketId), inserted, decoded));
      LogicalPlan projected = new Project(seq(columns), query);
      LogicalPlan shuffled =
          new RepartitionByExpression(seq(keys), projected, scala.Option.empty(), scala.Option.empty());
      List<SortOrder> order = new ArrayList<>();
      List<Expression> sortKeys = new ArrayList<>(keys);
      sortKeys.add(writeId);
      sortKeys.add(bucketId);
      sortKeys.add(rowId);
      for (Expression e : sortKeys) {
        order.add(new SortOrder(e, Ascending$.MODULE$, NullsFirst$.MODULE$, seq(List.of())));
      }
      return new Sort(seq(order), false, shuffled, scala.Option.empty());
    }

    private static Attribute find(Map<String, Attribute> byName, String name) {
      Attribute a = byName.get(name.toLowerCase(Locale.ROOT));
      if (a == null) {
        throw new IllegalStateException("row-level plan has no column " + name + ": " + byName.keySet());
      }
      return a;
    }

    private static Literal lit(int v) {
      return Literal.create(v, DataTypes.IntegerType);
    }

    /** The acid Python data source's writer of these labelled rows into {@code table}
     * (its commit writing the statement's metrics to {@code metricsPath}, if not null);
     * {@code grouped}: each Hive bucket's new rows come to one task. */
    private static Write pythonWrite(
        String table, String command, StructType schema, String metricsPath, boolean grouped) {
      Table python = AcidCatalog.provider().getTable(schema, new Transform[0], Map.of());
      Map<String, String> opts = new HashMap<>();
      opts.put("table", table);
      opts.put(ROW_LEVEL, command);
      if (metricsPath != null) {
        opts.put(AcidRowLevelMetrics.METRICS_PATH, metricsPath);
      }
      if (grouped) {
        opts.put("grouped_by_bucket", "true");
      }
      String txn = SQLConf.get().getConfString(AcidCatalog.TRANSACTION, null);
      if (txn != null) { // the session's shared wh.transaction(): the statement joins it
        opts.put("transaction", txn);
      }
      CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(opts);
      String queryId = UUID.randomUUID().toString();
      LogicalWriteInfo info = new LogicalWriteInfo() {
        @Override public CaseInsensitiveStringMap options() { return options; }
        @Override public String queryId() { return queryId; }
        @Override public StructType schema() { return schema; }
        @Override public Optional<StructType> rowIdSchema() { return Optional.empty(); }
        @Override public Optional<StructType> metadataSchema() { return Optional.empty(); }
      };
      return ((SupportsWrite) python).newWriteBuilder(info).build();
    }

    private static scala.collection.immutable.Seq<SparkPlan> empty() {
      return seq(List.of());
    }
  }

  static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(new ArrayList<>(items)).toSeq();
  }
}
