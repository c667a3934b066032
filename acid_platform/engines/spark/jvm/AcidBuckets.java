/*
 * acid_platform: Hive's bucket of a row, in the JVM, for Spark's write distribution (see
 * AcidCatalog.AcidTable.newWriteBuilder).
 *
 * A write into a bucketed table asks Spark to cluster its rows by (partition, Hive bucket), so
 * that each bucket file has one writer: INSERT OVERWRITE then writes base_w/bucket_N once per
 * bucket, and an append one statement id. The function acid_bucket(num_buckets, version,
 * 'hive types', columns...) of the session catalog computes the bucket as the table layer's
 * acid_platform.format.bucketing does (tested equal): h = 31 * h + field hash over the columns,
 * (h & 0x7FFFFFFF) % num_buckets, the field hash being Hive's bucketing_version 1 (Java
 * hashCode-style) or 2 (Hive's Murmur3, seed 104729, over the value's big-endian bytes).
 * A timestamp (Spark's TIMESTAMP_NTZ: Hive's wall-clock value) hashes as Hive's TimestampWritable:
 * version 1 its hashCode, (int) (s ^ s >>> 32) of s = seconds << 30 | nanos; version 2 Murmur3 of
 * its bytes (TimestampWritableV2.getBytes: seconds and the reversed nanos, VInt-encoded). A
 * binary value hashes as BytesWritable.hashCode in version 1; version 2 hashes the writable's
 * whole buffer, padding included, which no writer can reproduce: such a table (supported() is
 * false) keeps the Python writer's rules, as the table layer refuses it too.
 */
package acid_platform.spark;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.ApplyFunctionExpression;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;

final class AcidBuckets {
  static final String NAME = "acid_bucket";
  private static final int SEED = 104729;

  private AcidBuckets() {}

  /** Whether a bucketing column of this Spark type is hashed here in this version. */
  static boolean supported(DataType t, int version) {
    return t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType
        || t instanceof IntegerType || t instanceof LongType || t instanceof FloatType
        || t instanceof DoubleType || t instanceof StringType || t instanceof DateType
        || t instanceof DecimalType || t instanceof TimestampNTZType
        || (t instanceof BinaryType && version == 1);
  }

  /** acid_bucket(n, version, 'hive types', columns...) of a "load" answer's acid_bucketing
   * ("version|hive types|columns"), or null if a column's type is not hashed here. */
  static Transform transform(StructType answer, String bucketing) {
    String[] parts = bucketing.split("\\|", -1);
    String[] columns = parts[2].split(",");
    long n = 0;
    List<Expression> args = new ArrayList<>();
    for (StructField f : answer.fields()) {
      if (f.metadata().contains("acid_buckets")) {
        n = f.metadata().getLong("acid_buckets");
      }
    }
    args.add(Expressions.literal((int) n));
    args.add(Expressions.literal(Integer.parseInt(parts[0])));
    args.add(Expressions.literal(parts[1]));
    for (String c : columns) {
      if (!supported(answer.apply(c).dataType(), Integer.parseInt(parts[0]))) {
        return null;
      }
      args.add(Expressions.column(c));
    }
    return Expressions.apply(NAME, args.toArray(new Expression[0]));
  }

  /** The table's bucket transform ({@link #transform}) as a Catalyst expression over {@code
   * columns} (the expression of each bucketing column, by name): acid_bucket applied. */
  static org.apache.spark.sql.catalyst.expressions.Expression catalyst(
      Transform bucket,
      java.util.function.Function<String, org.apache.spark.sql.catalyst.expressions.Expression> columns) {
    List<org.apache.spark.sql.catalyst.expressions.Expression> children = new ArrayList<>();
    List<StructField> inputs = new ArrayList<>();
    for (Expression argument : bucket.arguments()) {
      org.apache.spark.sql.catalyst.expressions.Expression child;
      if (argument instanceof NamedReference) {
        child = columns.apply(((NamedReference) argument).fieldNames()[0]);
      } else {
        Literal<?> literal = (Literal<?>) argument;
        child = org.apache.spark.sql.catalyst.expressions.Literal.create(
            literal.value(), literal.dataType());
      }
      children.add(child);
      inputs.add(new StructField("_" + inputs.size(), child.dataType(), true, Metadata.empty()));
    }
    ScalarFunction<?> f =
        (ScalarFunction<?>) UNBOUND.bind(new StructType(inputs.toArray(new StructField[0])));
    return new ApplyFunctionExpression(f, AcidRowLevel.seq(children));
  }

  static final UnboundFunction UNBOUND = new UnboundFunction() {
    @Override public String name() { return NAME; }
    @Override public String description() { return "Hive's bucket of a row"; }

    @Override
    public BoundFunction bind(StructType input) {
      StructField[] fields = input.fields();
      if (fields.length < 4) {
        throw new UnsupportedOperationException(
            NAME + "(num_buckets, version, 'hive types', column, ...)");
      }
      DataType[] types = new DataType[fields.length - 3];
      for (int i = 3; i < fields.length; i++) {
        types[i - 3] = fields[i].dataType();
        if (!supported(types[i - 3], 1)) {
          throw new UnsupportedOperationException(NAME + " cannot hash " + types[i - 3]);
        }
      }
      DataType[] inputs = new DataType[fields.length];
      for (int i = 0; i < fields.length; i++) {
        inputs[i] = fields[i].dataType();
      }
      return new ScalarFunction<Integer>() {
        @Override public DataType[] inputTypes() { return inputs; }
        @Override public DataType resultType() { return DataTypes.IntegerType; }
        @Override public String name() { return NAME; }
        @Override public boolean isResultNullable() { return false; }

        @Override
        public Integer produceResult(InternalRow row) {
          String[] hive = row.getUTF8String(2).toString().split(",");
          int version = row.getInt(1);
          for (DataType t : types) {
            if (!supported(t, version)) {
              throw new UnsupportedOperationException(
                  NAME + " cannot hash " + t + " in bucketing_version " + version);
            }
          }
          int h = 0;
          for (int i = 0; i < types.length; i++) {
            h = 31 * h + field(row, i + 3, types[i], hive[i].trim().toLowerCase(), version);
          }
          return (h & 0x7FFFFFFF) % row.getInt(0);
        }
      };
    }
  };

  /** Hive's field hash of column {@code i} of {@code row}, of Hive type {@code hive}. */
  static int field(InternalRow row, int i, DataType t, String hive, int version) {
    if (row.isNullAt(i)) {
      return 0;
    }
    if (t instanceof BooleanType) {
      return row.getBoolean(i) ? 1 : 0;
    }
    if (t instanceof ByteType) {
      return row.getByte(i);
    }
    if (t instanceof ShortType) {
      short v = row.getShort(i);
      return version == 1 ? v : murmur(ByteBuffer.allocate(2).putShort(v).array());
    }
    if (t instanceof IntegerType || t instanceof DateType) {
      int v = row.getInt(i);
      return version == 1 ? v : murmur(ByteBuffer.allocate(4).putInt(v).array());
    }
    if (t instanceof LongType) {
      long v = row.getLong(i);
      return version == 1 ? (int) (v ^ (v >>> 32)) : murmur(ByteBuffer.allocate(8).putLong(v).array());
    }
    if (t instanceof FloatType) {
      int bits = Float.floatToIntBits(row.getFloat(i));
      // Hive writes putFloat(floatToIntBits(f)): the int bits converted to a float
      return version == 1 ? bits : murmur(ByteBuffer.allocate(4).putFloat((float) bits).array());
    }
    if (t instanceof DoubleType) {
      long bits = Double.doubleToLongBits(row.getDouble(i));
      return version == 1
          ? (int) (bits ^ (bits >>> 32))
          : murmur(ByteBuffer.allocate(8).putDouble((double) bits).array());
    }
    if (t instanceof StringType) {
      String s = row.getUTF8String(i).toString();
      if (hive.startsWith("char")) {
        s = s.replaceAll(" +$", ""); // Hive hashes CHAR without its padding
      }
      byte[] data = s.getBytes(StandardCharsets.UTF_8);
      if (version == 2) {
        return murmur(data);
      }
      int h = hive.equals("string") ? 0 : 1; // Text.hashCode (varchar, char) starts from 1
      for (byte b : data) {
        h = 31 * h + b;
      }
      return h;
    }
    if (t instanceof TimestampNTZType) {
      long micros = row.getLong(i);
      long seconds = Math.floorDiv(micros, 1_000_000L);
      int nanos = (int) Math.floorMod(micros, 1_000_000L) * 1000;
      if (version == 1) {
        long s = (seconds << 30) | nanos;
        return (int) (s ^ (s >>> 32));
      }
      return murmur(timestampBytes(seconds, nanos));
    }
    if (t instanceof BinaryType) {
      int h = 1; // BytesWritable.hashCode: WritableComparator.hashBytes
      for (byte b : row.getBinary(i)) {
        h = 31 * h + b;
      }
      return h;
    }
    DecimalType d = (DecimalType) t;
    BigDecimal v = row.getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal().stripTrailingZeros();
    if (v.scale() < 0) {
      v = v.setScale(0);
    }
    return version == 1 ? v.hashCode() : murmur(v.unscaledValue().toByteArray());
  }

  /** TimestampWritableV2.getBytes(): seconds' low 31 bits (the top bit: more follows), then
   * the nanos with their decimal digits reversed and, for seconds outside 0..2^31-1, the rest
   * of the seconds, each a Hadoop VLong. */
  static byte[] timestampBytes(long seconds, int nanos) {
    int reversed = 0;
    for (int n = nanos, k = 0; k < 9; k++, n /= 10) {
      reversed = reversed * 10 + n % 10;
    }
    boolean secondVInt = seconds < 0 || seconds > Integer.MAX_VALUE;
    boolean more = secondVInt || reversed != 0;
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    int first = (int) (seconds & 0x7FFFFFFFL) | (more ? 0x80000000 : 0);
    out.writeBytes(ByteBuffer.allocate(4).putInt(first).array());
    if (more) {
      writeVLong(out, secondVInt ? -reversed - 1L : reversed);
    }
    if (secondVInt) {
      writeVLong(out, seconds >> 31);
    }
    return out.toByteArray();
  }

  /** Hadoop's WritableUtils.writeVLong. */
  private static void writeVLong(java.io.ByteArrayOutputStream out, long v) {
    if (v >= -112 && v <= 127) {
      out.write((byte) v);
      return;
    }
    int len = -112;
    if (v < 0) {
      v ^= -1L;
      len = -120;
    }
    for (long tmp = v; tmp != 0; tmp >>= 8) {
      len--;
    }
    out.write((byte) len);
    len = len < -120 ? -(len + 120) : -(len + 112);
    for (int idx = len; idx != 0; idx--) {
      out.write((byte) ((v >> ((idx - 1) * 8)) & 0xFF));
    }
  }

  /** Hive's Murmur3.hash32 (seed 104729), with its sign-extended tail. */
  static int murmur(byte[] data) {
    int h = SEED;
    int n = data.length;
    int end = n & ~3;
    for (int i = 0; i < end; i += 4) {
      int k = (data[i] & 0xff) | ((data[i + 1] & 0xff) << 8) | ((data[i + 2] & 0xff) << 16)
          | ((data[i + 3] & 0xff) << 24);
      k = Integer.rotateLeft(k * 0xcc9e2d51, 15) * 0x1b873593;
      h = Integer.rotateLeft(h ^ k, 13) * 5 + 0xe6546b64;
    }
    int k1 = 0;
    for (int i = n - end - 1; i >= 0; i--) {
      k1 ^= data[end + i] << (8 * i);
    }
    if (n > end) {
      h ^= Integer.rotateLeft(k1 * 0xcc9e2d51, 15) * 0x1b873593;
    }
    h ^= n;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    return h ^ (h >>> 16);
  }
}
