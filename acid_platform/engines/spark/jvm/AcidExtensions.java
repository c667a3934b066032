/*
 * acid_platform: the session extension (spark.sql.extensions=acid_platform.spark.AcidExtensions)
 * that gives Spark SQL Hive's maintenance statements (see extensions.py).
 *
 *   ALTER TABLE db.t [PARTITION (ds = '2024-01-01')] COMPACT 'major' [AND WAIT] [POOL 'p']
 *   SHOW COMPACTIONS [db.t]
 *
 * Spark applies the classes named by spark.sql.extensions once, when it builds a session: this
 * one wraps the session's parser (AcidSyntax), which rewrites those statements into the CALL of
 * the procedure that does the work (AcidProcedures) and leaves every other text to Spark's.
 */
package acid_platform.spark;

import org.apache.spark.sql.SparkSessionExtensions;

import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

public final class AcidExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser((session, delegate) -> AcidSyntax.wrap(session, delegate));
    return BoxedUnit.UNIT;
  }
}
