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
 * Timestamp and binary columns are not hashed here (supported() is false): such tables keep the
 * Python writer's rules.
 */
package acid_platform.spark;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
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
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

final class AcidBuckets {
  static final String NAME = "acid_bucket";
  private static final int SEED = 104729;

  private AcidBuckets() {}

  /** Whether every bucketing column's Spark type is hashed here. */
  static boolean supported(DataType t) {
    return t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType
        || t instanceof IntegerType || t instanceof LongType || t instanceof FloatType
        || t instanceof DoubleType || t instanceof StringType || t instanceof DateType
        || t instanceof DecimalType;
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
      if (!supported(answer.apply(c).dataType())) {
        return null;
      }
      args.add(Expressions.column(c));
    }
    return Expressions.apply(NAME, args.toArray(new Expression[0]));
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
        if (!supported(types[i - 3])) {
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
    DecimalType d = (DecimalType) t;
    BigDecimal v = row.getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal().stripTrailingZeros();
    if (v.scale() < 0) {
      v = v.setScale(0);
    }
    return version == 1 ? v.hashCode() : murmur(v.unscaledValue().toByteArray());
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
