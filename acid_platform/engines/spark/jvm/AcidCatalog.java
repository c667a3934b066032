/*
 * acid_platform: the warehouse's ACID tables in Spark's session catalog (see catalog.py).
 *
 * A session catalog extension (spark.sql.catalog.spark_catalog) that keeps Spark's own tables
 * and adds the warehouse's: a name Spark's catalog does not know is looked up in the warehouse,
 * and CREATE TABLE ... USING <acid format> creates a warehouse table. Every warehouse operation
 * is done by the acid Python data source itself: this class calls its schema() (through Spark's
 * TableProvider.inferSchema, in a Python planning worker) with a "_catalog_op" option, writes
 * through the PythonTable Spark builds for it and reads through one built per scan
 * (AcidScans.java), with the table's name added to the options. No state is kept here: the
 * warehouse's metastore is the one catalog.
 */
package acid_platform.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public class AcidCatalog extends DelegatingCatalogExtension
    implements StagingTableCatalog, ProcedureCatalog {
  /** Option naming the catalog operation for the Python data source's schema(). */
  static final String OP = "_catalog_op";
  /** The session setting carrying the shared wh.transaction() (SparkEngine.share_transaction). */
  static final String TRANSACTION = "spark.acid.transaction";
  /** The acid format's name (set by register). */
  static String format() {
    return SQLConf.get().getConfString("spark.sql.catalog.spark_catalog.format", "acid");
  }

  private static final String SOURCE = "spark.sql.catalog.spark_catalog.source";

  /** Whether the format's name is AcidSource's, the Python data source having another. */
  static boolean sourceOn() {
    return SQLConf.get().getConfString(SOURCE, null) != null;
  }

  // ------------------------------------------------------------------ the Python data source

  static TableProvider provider() {
    String name = SQLConf.get().getConfString(SOURCE, format());
    scala.Option<TableProvider> p = DataSource.lookupDataSourceV2(name, SQLConf.get());
    if (p.isEmpty()) {
      throw new IllegalStateException(
          "the acid data source '" + name + "' is not registered: call wh.register_spark(spark)");
    }
    return p.get();
  }

  /** Run a catalog operation in the Python data source: its answer is a schema. */
  private StructType call(Identifier ident, String op, Map<String, String> extra) {
    return call(tableName(ident), op, extra);
  }

  /** {@code extra}: more options (a scan's: the warehouse and metastore it reads). */
  static StructType call(String table, String op, Map<String, String> extra) {
    Map<String, String> opts = new HashMap<>(extra);
    opts.put("table", table);
    opts.put(OP, op);
    return provider().inferSchema(new CaseInsensitiveStringMap(opts));
  }

  static String tableName(Identifier ident) {
    if (isPathIdentifier(ident)) {
      return ident.name(); // the data source resolves a warehouse path to its table
    }
    String[] ns = ident.namespace();
    return ns.length == 0 ? ident.name() : ns[ns.length - 1] + "." + ident.name();
  }

  /** acid.`/warehouse/db.db/t` (or a store URI): a table by its warehouse path, in every
   * statement a table name goes in (SELECT, INSERT, DELETE, UPDATE, MERGE), as Delta's
   * delta.`path`. Spark's own SQL-on-files takes file formats only, not a DataSource V2
   * source's paths, so the catalog resolves these identifiers itself. */
  static boolean isPathIdentifier(Identifier ident) {
    String[] ns = ident.namespace();
    String name = ident.name();
    return ns.length == 1
        && ns[0].equalsIgnoreCase(format())
        && (name.startsWith("/") || name.contains("://"));
  }

  private boolean isAcid(Map<String, String> properties) {
    String p = properties.get("provider");
    return p != null && p.equalsIgnoreCase(format());
  }

  /** {@code overwrite}: null to write as Spark asks; TRUE to replace what is written (an
   * RTAS into an existing table); FALSE to append whatever Spark asks (a table just created). */
  private AcidTable warehouseTable(Identifier ident, StructType answer, Boolean overwrite) {
    return new AcidTable(tableName(ident), answer, provider(), overwrite);
  }

  /** The warehouse's table, or null (one-part namespaces only: db.table). */
  private AcidTable lookup(Identifier ident) {
    if (ident.namespace().length != 1) {
      return null;
    }
    StructType answer = call(ident, "load", Map.of());
    return answer.fields().length == 0 ? null : warehouseTable(ident, answer, null);
  }

  /** The CREATE's columns and PARTITIONED BY / CLUSTERED BY as options of the "create" op. */
  private static Map<String, String> createOptions(
      Column[] columns, Transform[] partitions, Map<String, String> properties) {
    List<String> parts = new ArrayList<>();
    List<String> buckets = new ArrayList<>();
    int numBuckets = 0;
    for (Transform t : partitions) {
      if (t.name().equals("identity")) {
        parts.add(String.join(".", ((NamedReference) t.arguments()[0]).fieldNames()));
      } else if (t.name().equals("bucket") && numBuckets == 0) {
        for (Expression e : t.arguments()) {
          if (e instanceof Literal) {
            numBuckets = ((Number) ((Literal<?>) e).value()).intValue();
          } else if (e instanceof NamedReference) {
            buckets.add(String.join(".", ((NamedReference) e).fieldNames()));
          }
        }
      } else {
        throw new UnsupportedOperationException(
            "acid tables are partitioned by columns (PARTITIONED BY (c)) and bucketed by one "
                + "CLUSTERED BY (c) INTO n BUCKETS; not by " + t.describe());
      }
    }
    Map<String, String> opts = new HashMap<>();
    opts.put("_catalog_schema", CatalogV2Util.v2ColumnsToStructType(columns).json());
    opts.put("_catalog_partitions", String.join(",", parts));
    opts.put("_catalog_buckets", numBuckets == 0 ? "" : numBuckets + ":" + String.join(",", buckets));
    StringBuilder props = new StringBuilder();
    for (Map.Entry<String, String> e : properties.entrySet()) {
      props.append(e.getKey()).append('\u0001').append(e.getValue()).append('\u0002');
    }
    opts.put("_catalog_properties", props.toString());
    return opts;
  }

  // ------------------------------------------------------------------ TableCatalog

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    super.initialize(name, options);
    AcidRowLevel.install(); // DELETE / UPDATE / MERGE INTO (AcidRowLevel.java)
  }

  /** acid_bucket(...): Hive's bucket of a row (AcidBuckets.java), for bucketed writes. */
  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    if (ident.namespace().length == 0 && ident.name().equalsIgnoreCase(AcidBuckets.NAME)) {
      return AcidBuckets.UNBOUND;
    }
    return super.loadFunction(ident);
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    try {
      return super.loadTable(ident);
    } catch (NoSuchTableException missing) {
      AcidTable t = lookup(ident);
      if (t == null) {
        throw missing;
      }
      return t;
    }
  }

  @Override
  public boolean tableExists(Identifier ident) {
    return super.tableExists(ident) || lookup(ident) != null;
  }

  /** The warehouse's databases. */
  private Set<String> databases() {
    Set<String> names = new LinkedHashSet<>();
    for (StructField f : call(Identifier.of(new String[] {"default"}, "_"), "databases", Map.of()).fields()) {
      names.add(f.name());
    }
    return names;
  }

  private boolean inWarehouse(String[] namespace) {
    return namespace.length == 1 && databases().contains(namespace[0].toLowerCase());
  }

  @Override
  public String[][] listNamespaces() throws NoSuchNamespaceException {
    Set<List<String>> all = new LinkedHashSet<>();
    for (String[] ns : super.listNamespaces()) {
      all.add(Arrays.asList(ns));
    }
    for (String db : databases()) {
      all.add(List.of(db));
    }
    String[][] out = new String[all.size()][];
    int i = 0;
    for (List<String> ns : all) {
      out[i++] = ns.toArray(new String[0]);
    }
    return out;
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return super.namespaceExists(namespace) || inWarehouse(namespace);
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    try {
      return super.loadNamespaceMetadata(namespace);
    } catch (NoSuchNamespaceException missing) {
      if (inWarehouse(namespace)) {
        return Map.of();
      }
      throw missing;
    }
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    Set<Identifier> all = new LinkedHashSet<>();
    try {
      all.addAll(Arrays.asList(super.listTables(namespace)));
    } catch (NoSuchNamespaceException missing) {
      if (!inWarehouse(namespace)) {
        throw missing;
      }
    }
    if (namespace.length == 1) {
      StructType names = call(Identifier.of(namespace, "_"), "list", Map.of());
      for (StructField f : names.fields()) {
        all.add(Identifier.of(namespace, f.name()));
      }
    }
    return all.toArray(new Identifier[0]);
  }

  @Override
  public Table createTable(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!isAcid(properties)) {
      return super.createTable(ident, columns, partitions, properties);
    }
    if (super.tableExists(ident)) {
      throw new TableAlreadyExistsException(ident);
    }
    StructType answer = call(ident, "create", createOptions(columns, partitions, properties));
    return warehouseTable(ident, answer, Boolean.FALSE);
  }

  @Override
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    return createTable(ident, CatalogV2Util.structTypeToV2Columns(schema, false), partitions, properties);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (super.tableExists(ident)) {
      return super.dropTable(ident);
    }
    return ident.namespace().length == 1 && call(ident, "drop", Map.of()).fields().length > 0;
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    return super.tableExists(ident) ? super.purgeTable(ident) : dropTable(ident);
  }

  // ------------------------------------------------------------------ ProcedureCatalog
  // CALL system.compact(...), system.show_compactions(): AcidProcedures.java

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    return AcidProcedures.load(ident, this::sparkTable);
  }

  /** Whether Spark's own catalog has the table ("db.t", or "t" in default). */
  private boolean sparkTable(String table) {
    int dot = table.lastIndexOf('.');
    String db = dot < 0 ? "default" : table.substring(0, dot);
    return super.tableExists(Identifier.of(new String[] {db}, table.substring(dot + 1)));
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    return AcidProcedures.list(namespace);
  }

  // ------------------------------------------------------------------ StagingTableCatalog
  // CTAS / RTAS (saveAsTable): Spark picks the staged path for every table of a staging catalog.

  @Override
  public StagedTable stageCreate(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!isAcid(properties)) {
      super.createTable(ident, columns, partitions, properties);
      return new Staged(this, ident, writable(ident, columns, partitions, properties), true);
    }
    Table t = createTable(ident, columns, partitions, properties);
    return new Staged(this, ident, t, true);
  }

  @Override
  public StagedTable stageReplace(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException, NoSuchTableException {
    if (!tableExists(ident)) {
      throw new NoSuchTableException(ident);
    }
    return stageCreateOrReplace(ident, columns, partitions, properties);
  }

  @Override
  public StagedTable stageCreateOrReplace(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException {
    try {
      if (!isAcid(properties)) {
        if (super.tableExists(ident)) {
          super.dropTable(ident);
        }
        super.createTable(ident, columns, partitions, properties);
        return new Staged(this, ident, writable(ident, columns, partitions, properties), true);
      }
      if (super.tableExists(ident)) {
        throw new TableAlreadyExistsException(ident);
      }
      // an existing warehouse table keeps its definition and history: INSERT OVERWRITE
      StructType answer = call(ident, "replace", createOptions(columns, partitions, properties));
      Metadata first = answer.fields()[0].metadata();
      boolean created =
          first.contains("acid_created") && "true".equals(first.getString("acid_created"));
      return new Staged(this, ident, warehouseTable(ident, answer, !created), created);
    } catch (TableAlreadyExistsException e) {
      throw AcidCatalog.<RuntimeException>rethrow(e);
    }
  }

  /** Spark's own (checked, in Java's eyes) analysis error, thrown as it is. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E rethrow(Throwable e) throws E {
    throw (E) e;
  }

  /** Another V2 source's table just created in Spark's catalog, as its provider writes it
   * (with a session catalog extension, Spark's catalog answers such tables as V1Table). */
  private Table writable(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties) {
    Table t;
    try {
      t = super.loadTable(ident);
    } catch (NoSuchTableException e) {
      throw AcidCatalog.<RuntimeException>rethrow(e);
    }
    String name = properties.get("provider");
    if (t instanceof SupportsWrite || name == null) {
      return t;
    }
    scala.Option<TableProvider> p = DataSource.lookupDataSourceV2(name, SQLConf.get());
    if (p.isEmpty()) {
      return t;
    }
    StructType schema = CatalogV2Util.v2ColumnsToStructType(columns);
    return p.get().getTable(schema, partitions, properties);
  }

  /** A created (dropped on abort) or existing (kept on abort) table of a CTAS / RTAS. */
  static final class Staged implements StagedTable, SupportsRead, SupportsWrite {
    private final AcidCatalog catalog;
    private final Identifier ident;
    private final Table table;
    private final boolean created;

    Staged(AcidCatalog catalog, Identifier ident, Table table, boolean created) {
      this.catalog = catalog;
      this.ident = ident;
      this.table = table;
      this.created = created;
    }

    @Override public String name() { return table.name(); }
    @Override public StructType schema() { return table.schema(); }
    @Override public Column[] columns() { return table.columns(); }
    @Override public Transform[] partitioning() { return table.partitioning(); }
    @Override public Map<String, String> properties() { return table.properties(); }
    @Override public Set<TableCapability> capabilities() { return table.capabilities(); }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return ((SupportsRead) table).newScanBuilder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return ((SupportsWrite) table).newWriteBuilder(info);
    }

    @Override public void commitStagedChanges() {}

    @Override
    public void abortStagedChanges() {
      if (created) {
        catalog.dropTable(ident);
      }
    }
  }

  // ------------------------------------------------------------------ the table

  /** A warehouse table: the Python data source's PythonTables (writes; a new one per scan,
   * see AcidScans) with the table's name as option. */
  static final class AcidTable
      implements SupportsRead, SupportsWrite, SupportsRowLevelOperations, SupportsMetadataColumns {
    private final String name;
    private final StructType schema;
    private final Transform[] partitioning;
    private final Map<String, String> properties = new HashMap<>();
    private final Table writes;
    private final Boolean overwrite;
    /** Hive's bucket of a row as the write's clustering (null: not bucketed, or a type the
     * JVM does not hash: the Python writer's rules then). */
    private Transform bucket;

    AcidTable(String name, StructType answer, TableProvider writer, Boolean overwrite) {
      this.name = name;
      this.overwrite = overwrite;
      List<Transform> parts = new ArrayList<>();
      List<String> bucketCols = new ArrayList<>();
      long buckets = 0;
      for (StructField f : answer.fields()) {
        Metadata m = f.metadata();
        if (m.contains("acid_partition")) {
          parts.add(Expressions.identity(f.name()));
        }
        if (m.contains("acid_buckets")) {
          buckets = m.getLong("acid_buckets");
          bucketCols.add(f.name());
        }
        if (m.contains("acid_bucketing")) {
          bucket = AcidBuckets.transform(answer, m.getString("acid_bucketing"));
        }
        if (m.contains("acid_properties")) {
          for (String entry : m.getString("acid_properties").split("\u0002")) {
            int cut = entry.indexOf('\u0001');
            if (cut > 0) {
              properties.put(entry.substring(0, cut), entry.substring(cut + 1));
            }
          }
        }
      }
      if (buckets > 0) {
        parts.add(Expressions.bucket((int) buckets, bucketCols.toArray(new String[0])));
      }
      this.schema = columnsOf(answer);
      this.partitioning = parts.toArray(new Transform[0]);
      this.writes = writer.getTable(schema, new Transform[0], Map.of());
    }

    /** The table's columns in a "load" answer (without the answer's metadata). */
    static StructType columnsOf(StructType answer) {
      List<StructField> fields = new ArrayList<>();
      for (StructField f : answer.fields()) {
        fields.add(new StructField(f.name(), f.dataType(), f.nullable(), Metadata.empty()));
      }
      return new StructType(fields.toArray(new StructField[0]));
    }

    /** The table's name (db.table) in a "load" answer. */
    static String nameOf(StructType answer) {
      return answer.fields()[0].metadata().getString("acid_table");
    }

    @Override public String name() { return name; }
    @Override public String toString() { return "acid table " + name; }
    @Override public StructType schema() { return schema; }
    @Override public Column[] columns() { return CatalogV2Util.structTypeToV2Columns(schema, false); }
    @Override public Transform[] partitioning() { return partitioning; }
    @Override public Map<String, String> properties() { return properties; }

    /** Hive's bucket of a row as a transform (AcidBuckets.transform), or null: the table is
     * not bucketed, or by a type the JVM does not hash. */
    Transform bucket() {
      return bucket;
    }

    /** The partition columns, in the table's order. */
    List<String> partitionColumnNames() {
      List<String> out = new ArrayList<>();
      for (Transform t : partitioning) {
        if (t.name().equals("identity")) {
          out.add(((NamedReference) t.arguments()[0]).fieldNames()[0]);
        }
      }
      return out;
    }

    /** ROW__ID and the partition values of a row, for DELETE / UPDATE / MERGE. */
    @Override
    public MetadataColumn[] metadataColumns() {
      return AcidRowLevel.metadataColumns(schema, partitionColumnNames());
    }

    @Override
    public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
      return AcidRowLevel.builder(this, info.command(), partitionColumnNames());
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(
          TableCapability.BATCH_READ,
          TableCapability.BATCH_WRITE,
          TableCapability.TRUNCATE,
          TableCapability.OVERWRITE_DYNAMIC,
          TableCapability.OVERWRITE_BY_FILTER,
          TableCapability.MICRO_BATCH_READ,
          TableCapability.STREAMING_WRITE);
    }

    /** The table's name, and the session's shared wh.transaction() (setting
     * spark.acid.transaction, as the statement is planned) that its reads and writes join. */
    private CaseInsensitiveStringMap withTable(CaseInsensitiveStringMap options) {
      Map<String, String> merged = new HashMap<>(options.asCaseSensitiveMap());
      merged.put("table", name);
      merged.remove("path");
      String txn = SQLConf.get().getConfString(TRANSACTION, null);
      if (txn != null && !merged.containsKey("transaction")) {
        merged.put("transaction", txn);
      }
      return new CaseInsensitiveStringMap(merged);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return new AcidScans.Builder(name, schema, partitionColumns(), withTable(options));
    }

    private Set<String> partitionColumns() {
      Set<String> columns = new HashSet<>();
      for (Transform t : partitioning) {
        if (t.name().equals("identity")) {
          columns.add(((NamedReference) t.arguments()[0]).fieldNames()[0].toLowerCase());
        }
      }
      return columns;
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      Map<String, String> opts = new HashMap<>(withTable(info.options()).asCaseSensitiveMap());
      if (bucket != null) { // Spark clusters the rows by bucket: one writer per bucket file
        opts.put("grouped_by_bucket", "true");
      }
      CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(opts);
      LogicalWriteInfo named = new LogicalWriteInfo() {
        @Override public CaseInsensitiveStringMap options() { return options; }
        @Override public String queryId() { return info.queryId(); }
        @Override public StructType schema() { return info.schema(); }
        @Override public Optional<StructType> rowIdSchema() { return info.rowIdSchema(); }
        @Override public Optional<StructType> metadataSchema() { return info.metadataSchema(); }
      };
      WriteBuilder inner = ((SupportsWrite) writes).newWriteBuilder(named);
      return new OverwritingBuilder(inner, overwrite, partitionColumns(), distribution());
    }

    /** (partition columns, Hive bucket): each bucket file of a write has one writer. */
    private Expression[] distribution() {
      if (bucket == null) {
        return null;
      }
      List<Expression> keys = new ArrayList<>();
      for (String c : partitionColumnNames()) {
        keys.add(Expressions.column(c));
      }
      keys.add(bucket);
      return keys.toArray(new Expression[0]);
    }
  }

  /** INSERT OVERWRITE as the Python writer's overwrite flag: the acid writer replaces the
   * partitions it writes, so truncate, dynamic partitions and a static PARTITION (c = v, …)
   * (rows Spark fills with those values) are all that flag; other filters are refused. */
  static final class OverwritingBuilder implements SupportsOverwriteV2, SupportsDynamicOverwrite {
    private WriteBuilder inner;
    private final Boolean overwrite;
    private final Set<String> partitionColumns;
    private final Expression[] distribution;

    OverwritingBuilder(WriteBuilder inner, Boolean overwrite, Set<String> partitionColumns,
        Expression[] distribution) {
      this.distribution = distribution;
      this.overwrite = overwrite;
      this.partitionColumns = partitionColumns;
      this.inner = Boolean.TRUE.equals(overwrite) ? ((SupportsTruncate) inner).truncate() : inner;
    }

    @Override
    public WriteBuilder truncate() {
      if (overwrite == null) {
        inner = ((SupportsTruncate) inner).truncate();
      }
      return this;
    }

    private boolean staticPartitions(Predicate[] predicates) {
      for (Predicate p : predicates) {
        if (!staticPartition(p)) {
          return false;
        }
      }
      return true;
    }

    private boolean staticPartition(Predicate p) {
      if (p instanceof AlwaysTrue) {
        return true;
      }
      Expression[] args = p.children();
      if (p.name().equals("AND")) {
        return staticPartition((Predicate) args[0]) && staticPartition((Predicate) args[1]);
      }
      if ((p.name().equals("=") || p.name().equals("<=>")) && args.length == 2) {
        Expression ref = args[0] instanceof NamedReference ? args[0] : args[1];
        Expression lit = ref == args[0] ? args[1] : args[0];
        return ref instanceof NamedReference
            && lit instanceof Literal
            && ((NamedReference) ref).fieldNames().length == 1
            && partitionColumns.contains(((NamedReference) ref).fieldNames()[0].toLowerCase());
      }
      return false;
    }

    @Override
    public WriteBuilder overwrite(Predicate[] predicates) {
      if (!staticPartitions(predicates)) {
        throw new UnsupportedOperationException(
            "an ACID table's INSERT OVERWRITE replaces whole partitions: PARTITION (c = v, ...) "
                + "on partition columns only, not " + Arrays.toString(predicates));
      }
      return truncate();
    }

    @Override
    public WriteBuilder overwriteDynamicPartitions() {
      return truncate();
    }

    @Override
    public Write build() {
      Write write = inner.build();
      return distribution == null ? write : new Clustered(write, distribution);
    }
  }

  /** A write whose rows Spark clusters by (partition, Hive bucket) first. */
  static final class Clustered implements Write, RequiresDistributionAndOrdering {
    private final Write inner;
    private final Expression[] keys;

    Clustered(Write inner, Expression[] keys) {
      this.inner = inner;
      this.keys = keys;
    }

    @Override public String description() { return inner.description(); }
    @Override public BatchWrite toBatch() { return inner.toBatch(); }
    @Override public StreamingWrite toStreaming() { return inner.toStreaming(); }
    @Override public CustomMetric[] supportedCustomMetrics() { return inner.supportedCustomMetrics(); }
    @Override public CustomTaskMetric[] reportDriverMetrics() { return inner.reportDriverMetrics(); }
    @Override public Distribution requiredDistribution() { return Distributions.clustered(keys); }
    @Override public SortOrder[] requiredOrdering() { return new SortOrder[0]; }
  }
}
