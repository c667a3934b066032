/*
 * acid_platform: a Spark SQL DML statement whose conditions and values may be DataFrame Columns
 * (see acid_table.py, AcidTable's DataFrame API).
 *
 * The statement is Spark SQL text, parsed by the session's parser as spark.sql(text) parses it;
 * each Column stands in the text as a one-part name (`__acid_column_<n>`) that is replaced by
 * the Column's own expression in the parsed plan, so that a Column keeps its exact meaning
 * (no printing back to SQL). The plan then runs as spark.sql's would: DELETE / UPDATE / MERGE
 * INTO through Spark's row-level operations on the acid table (AcidRowLevel.java).
 */
package acid_platform.spark;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.ColumnNodeToExpressionConverter$;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;

public final class AcidDml {
  private AcidDml() {}

  /** Run {@code statement} with {@code columns[i]} in place of the name {@code names[i]}. */
  public static Dataset<Row> run(
      SparkSession session, String statement, String[] names, Column[] columns)
      throws org.apache.spark.sql.catalyst.parser.ParseException {
    Map<String, Expression> by = new HashMap<>();
    for (int i = 0; i < names.length; i++) {
      by.put(names[i], ColumnNodeToExpressionConverter$.MODULE$.apply(columns[i].node()));
    }
    LogicalPlan parsed = session.sessionState().sqlParser().parsePlan(statement);
    LogicalPlan plan = (LogicalPlan) parsed.transformAllExpressions(
        new scala.runtime.AbstractPartialFunction<Expression, Expression>() {
          private String placeholder(Expression e) {
            if (!(e instanceof UnresolvedAttribute)) {
              return null;
            }
            scala.collection.immutable.Seq<String> parts = ((UnresolvedAttribute) e).nameParts();
            return parts.length() == 1 && by.containsKey(parts.head()) ? parts.head() : null;
          }

          @Override
          public boolean isDefinedAt(Expression e) {
            return placeholder(e) != null;
          }

          @Override
          public <E1 extends Expression, B1> B1 applyOrElse(
              E1 e, scala.Function1<E1, B1> otherwise) {
            String name = placeholder(e);
            @SuppressWarnings("unchecked")
            B1 out = name == null ? otherwise.apply(e) : (B1) by.get(name);
            return out;
          }
        });
    return Dataset.ofRows(session, plan);
  }
}
