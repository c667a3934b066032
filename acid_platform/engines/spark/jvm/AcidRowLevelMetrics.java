/*
 * acid_platform: what spark.sql("DELETE / UPDATE / MERGE INTO ...") on an acid table returns -
 * one row of the committed statement's counts, in Delta Lake's columns (see row_level.py).
 *
 * Spark gives a command's DataFrame the output of its *analysed* plan (QueryExecution's eager
 * command execution: CommandResult(qe.analyzed.output, ...)), and Spark's rewrite rules turn
 * these statements into a WriteDelta whose output is empty. Neither the planner (extraStrategies)
 * nor the optimizer (extraOptimizations) can change that schema, and a session's analyser rules
 * are fixed when its analyser is built (SparkSessionExtensions, spark.sql.extensions: static, at
 * session creation - before wh.register_spark ever sees the session). So install() appends one
 * rule to the built analyser's post-hoc resolution rules (the batch after the one that rewrites
 * the statement): it replaces a WriteDelta on an acid table by a Statement, a command over the
 * same target and rows whose output is the metrics columns. AcidRowLevel.Planner plans a Statement as an Exec over the
 * usual append: the append runs, the Python data source's commit writes the committed
 * StatementMetrics as JSON to a path of this statement alone (option metrics_path, a fresh
 * UUID), and the Exec returns them as one row and removes the file. If the analyser has no
 * such field (another Spark), nothing is installed: the statements run and return no rows.
 * AcidRowLevel.install() calls install() when the session catalog loads, which registering the
 * warehouse does (catalog_install.py), before any statement on its tables is analysed.
 */
package acid_platform.spark;

import java.io.File;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.Analyzer;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.WriteDelta;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.catalyst.trees.TreePattern;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationTable;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.collection.immutable.Seq;

final class AcidRowLevelMetrics {
  /** The Python data source's option: where its commit writes the statement's metrics. */
  static final String METRICS_PATH = "metrics_path";
  private static final String FIELD = "postHocResolutionRules";

  private AcidRowLevelMetrics() {}

  /** Delta Lake's columns for a command's result. */
  static StructType columns(RowLevelOperation.Command command) {
    StructType schema = new StructType().add("num_affected_rows", DataTypes.LongType, false);
    if (command == RowLevelOperation.Command.MERGE) {
      schema = schema
          .add("num_updated_rows", DataTypes.LongType, false)
          .add("num_deleted_rows", DataTypes.LongType, false)
          .add("num_inserted_rows", DataTypes.LongType, false);
    }
    return schema;
  }

  /** Append Label to the session analyser's post-hoc resolution rules (once); false if this
   * Spark's analyser has no such field. */
  static boolean install(org.apache.spark.sql.classic.SparkSession session) {
    Analyzer analyzer = session.sessionState().analyzer();
    synchronized (analyzer) {
      for (Class<?> c = analyzer.getClass(); c != null; c = c.getSuperclass()) {
        Field field;
        try {
          field = c.getDeclaredField(FIELD);
        } catch (NoSuchFieldException e) {
          continue;
        }
        try {
          field.setAccessible(true);
          @SuppressWarnings("unchecked")
          Seq<Rule<LogicalPlan>> rules = (Seq<Rule<LogicalPlan>>) field.get(analyzer);
          List<Rule<LogicalPlan>> list = new ArrayList<>(
              scala.jdk.javaapi.CollectionConverters.asJava(rules));
          for (Rule<LogicalPlan> r : list) {
            if (r instanceof Label) {
              return true;
            }
          }
          list.add(new Label());
          field.set(analyzer, AcidRowLevel.seq(list));
          return true;
        } catch (ReflectiveOperationException | RuntimeException e) {
          return false;
        }
      }
      return false;
    }
  }

  /** The command of a WriteDelta on an acid table; null for any other table. */
  static RowLevelOperation.Command acidCommand(NamedRelation relation) {
    if (!(relation instanceof DataSourceV2Relation)) {
      return null;
    }
    Table t = ((DataSourceV2Relation) relation).table();
    if (!(t instanceof RowLevelOperationTable)
        || !(((RowLevelOperationTable) t).table() instanceof AcidCatalog.AcidTable)) {
      return null;
    }
    return ((RowLevelOperationTable) t).operation().command();
  }

  /** The post-hoc rule: a WriteDelta on an acid table becomes a Statement. */
  static final class Label extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      if (!(plan instanceof WriteDelta)) {
        return plan;
      }
      WriteDelta d = (WriteDelta) plan;
      if (acidCommand(d.table()) == null) {
        return plan;
      }
      return Statement.of(d);
    }
  }

  /** (Public, as Spark copies plan nodes through their public constructors.) A statement on an
   * acid table in place of its WriteDelta: the same target and rows (its
   * query, the only child, optimized as WriteDelta's), the metrics columns as output. Not a
   * wrapper of the WriteDelta: a command's child commands are run eagerly on their own
   * (QueryExecution's NON_ROOT mode); nor a Java subclass of it: javac rejects the bridge
   * methods Scala gives the case class. */
  public static final class Statement extends LogicalPlan implements Command {
    private final NamedRelation table;
    private final LogicalPlan query;
    private final Seq<Attribute> columns;

    public Statement(NamedRelation table, LogicalPlan query, Seq<Attribute> columns) {
      this.table = table;
      this.query = query;
      this.columns = columns;
    }

    @SuppressWarnings("unchecked")
    static Statement of(WriteDelta delta) {
      return new Statement(delta.table(), delta.query(), (Seq<Attribute>) (Seq<?>)
          DataTypeUtils.toAttributes(columns(acidCommand(delta.table()))));
    }

    /** The target: a DataSourceV2Relation of a RowLevelOperationTable. */
    NamedRelation table() { return table; }

    /** The labelled rows to write (WriteDelta's query). */
    LogicalPlan query() { return query; }

    @Override public Seq<Attribute> output() { return columns; }
    @Override public AttributeSet producedAttributes() { return outputSet(); }
    @Override public Seq<LogicalPlan> children() { return AcidRowLevel.seq(List.of(query)); }

    @Override
    public Seq<scala.Enumeration.Value> nodePatterns() {
      return AcidRowLevel.seq(List.of(TreePattern.COMMAND()));
    }

    @Override
    public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
        Seq<scala.Enumeration.Value> patterns) {}

    @Override
    public LogicalPlan withNewChildrenInternal(
        scala.collection.immutable.IndexedSeq<LogicalPlan> c) {
      return new Statement(table, c.apply(0), columns);
    }

    @Override public int productArity() { return 3; }

    @Override
    public Object productElement(int n) {
      switch (n) {
        case 0: return table;
        case 1: return query;
        case 2: return columns;
        default: throw new IndexOutOfBoundsException(String.valueOf(n));
      }
    }

    @Override public boolean canEqual(Object other) { return other instanceof Statement; }
  }

  /** A fresh path for one statement's metrics (nothing is created until its commit). */
  static String newPath() {
    return new File(System.getProperty("java.io.tmpdir"),
        "acid-statement-" + UUID.randomUUID() + ".json").getAbsolutePath();
  }

  /** Runs the statement's append, then returns its committed metrics as one row. A statement
   * of the session's shared wh.transaction() ({@code transaction}, else null) that fails
   * aborts that transaction, as Hive aborts it - also when Spark fails it before its write
   * began (a MERGE cardinality violation in the stage before the write: Spark calls the
   * writer's abort only for a failed write job). */
  public static final class Exec extends V2CommandExec {
    private final Seq<Attribute> columns;
    private final SparkPlan child;
    private final String path;
    private final String table;
    private final String transaction;

    public Exec(
        Seq<Attribute> columns, SparkPlan child, String path, String table, String transaction) {
      this.columns = columns;
      this.child = child;
      this.path = path;
      this.table = table;
      this.transaction = transaction;
    }

    @Override
    public Seq<InternalRow> run() {
      File file = new File(path);
      try {
        try {
          child.executeCollect();
        } catch (RuntimeException | Error e) {
          if (transaction != null) {
            try {
              AcidCatalog.call(table, "abort_transaction", Map.of("transaction", transaction));
            } catch (RuntimeException abortFailed) {
              e.addSuppressed(abortFailed);
            }
          }
          throw e;
        }
        JsonNode m = new ObjectMapper().readTree(file);
        long inserted = m.path("rows_inserted").asLong();
        long updated = m.path("rows_updated").asLong();
        long deleted = m.path("rows_deleted").asLong();
        Object[] values = columns.size() == 1
            ? new Object[] {inserted + updated + deleted}
            : new Object[] {inserted + updated + deleted, updated, deleted, inserted};
        return AcidRowLevel.seq(List.<InternalRow>of(new GenericInternalRow(values)));
      } catch (java.io.IOException e) {
        throw new IllegalStateException("the statement committed, but its metrics at " + path
            + " could not be read: " + e, e);
      } finally {
        file.delete();
      }
    }

    @Override public Seq<Attribute> output() { return columns; }
    @Override public Seq<SparkPlan> children() { return AcidRowLevel.seq(List.of(child)); }

    @Override
    public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> c) {
      return new Exec(columns, c.apply(0), path, table, transaction);
    }

    @Override public int productArity() { return 5; }

    @Override
    public Object productElement(int n) {
      switch (n) {
        case 0: return columns;
        case 1: return child;
        case 2: return path;
        case 3: return table;
        case 4: return transaction;
        default: throw new IndexOutOfBoundsException(String.valueOf(n));
      }
    }

    @Override public boolean canEqual(Object other) { return other instanceof Exec; }
  }
}
