/*
 * acid_platform: Hive's maintenance statements, rewritten into the procedures' CALLs (see
 * extensions.py; installed by AcidExtensions).
 *
 *   ALTER TABLE [db.]t [PARTITION (c = v, ...)] COMPACT 'type' [AND WAIT] [POOL 'p']
 *     -> CALL system.compact(table => 'db.t', type => 'type', partition => 'c=v/...',
 *                            wait => true, pool => 'p')
 *   SHOW COMPACTIONS [[db.]t]
 *     -> CALL system.show_compactions([table => 'db.t'])
 *
 * Spark's grammar knows both statements only to refuse them. The session's parser is wrapped:
 * a text of one of these forms is parsed as its CALL by the wrapped parser (so the plan is the
 * procedure's, run by the same code as a CALL), every other text is parsed as it is. A table
 * without a database is in the session's current database; the partition's values are escaped
 * as Hive names partitions. A statement of these forms with a clause the procedures do not
 * take (CLUSTERED INTO, WITH OVERWRITE TBLPROPERTIES, ORDER BY; SHOW COMPACTIONS' filters)
 * fails with one line saying what Spark SQL takes.
 */
package acid_platform.spark;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.parser.ParserInterface;

final class AcidSyntax {
  /** A text worth tokenizing: it has the word COMPACT or COMPACTIONS somewhere. */
  private static final Pattern CANDIDATE = Pattern.compile("(?i)\\bCOMPACT(IONS)?\\b");
  private static final String SESSION_CATALOG = "spark_catalog";
  static final String COMPACT_FORM =
      "ALTER TABLE [db.]t [PARTITION (c = v, ...)] COMPACT 'type' [AND WAIT] [POOL 'name'] "
          + "(CLUSTERED INTO, WITH OVERWRITE TBLPROPERTIES and ORDER BY: wh.sql)";
  static final String SHOW_FORM = "SHOW COMPACTIONS [[db.]t] (filter its rows as a DataFrame)";

  private AcidSyntax() {}

  /** {@code delegate}, with the statements above parsed as their CALLs. A proxy, so that the
   * methods a Spark version adds to ParserInterface reach {@code delegate} as they are. */
  static ParserInterface wrap(SparkSession session, ParserInterface delegate) {
    return (ParserInterface) Proxy.newProxyInstance(
        AcidSyntax.class.getClassLoader(),
        new Class<?>[] {ParserInterface.class},
        (proxy, method, args) -> {
          String name = method.getName();
          if ((name.equals("parsePlan") || name.equals("parsePlanWithParameters"))
              && args != null && args.length > 0 && args[0] instanceof String) {
            String call = rewrite((String) args[0], () -> session.catalog().currentDatabase());
            if (call != null) {
              args = args.clone();
              args[0] = call;
            }
          }
          try {
            return method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** The CALL text of a maintenance statement, or null for any other text. */
  static String rewrite(String text, java.util.function.Supplier<String> currentDatabase) {
    if (!CANDIDATE.matcher(text).find()) {
      return null;
    }
    List<Token> tokens = tokens(text);
    if (tokens == null) {
      return null; // an unterminated literal or comment: Spark's parser says where
    }
    Cursor c = new Cursor(tokens);
    if (c.accept("ALTER") && c.accept("TABLE") && compactsAt(tokens, c.pos)) {
      return compact(c, currentDatabase);
    }
    c.pos = 0;
    if (c.accept("SHOW") && c.accept("COMPACTIONS")) {
      return showCompactions(c, currentDatabase);
    }
    return null;
  }

  /** Whether the ALTER TABLE whose name starts at {@code i} is a compaction: the name, a
   * parenthesised partition spec maybe, then COMPACT. */
  private static boolean compactsAt(List<Token> tokens, int i) {
    int n = tokens.size();
    if (i >= n || !tokens.get(i).isName()) {
      return false;
    }
    i++;
    while (i + 1 < n && tokens.get(i).is(".") && tokens.get(i + 1).isName()) {
      i += 2;
    }
    if (i + 1 < n && tokens.get(i).isWord("PARTITION") && tokens.get(i + 1).is("(")) {
      int depth = 0;
      for (i++; i < n; i++) {
        depth += tokens.get(i).is("(") ? 1 : tokens.get(i).is(")") ? -1 : 0;
        if (depth == 0) {
          i++;
          break;
        }
      }
    }
    return i < n && tokens.get(i).isWord("COMPACT");
  }

  private static String compact(Cursor c, java.util.function.Supplier<String> currentDatabase) {
    String table = c.tableName(currentDatabase, COMPACT_FORM);
    String partition = null;
    if (c.accept("PARTITION")) {
      partition = c.partitionSpec();
    }
    c.expect("COMPACT", COMPACT_FORM);
    String type = c.string("the compaction type ('major' or 'minor')", COMPACT_FORM);
    boolean wait = false;
    if (c.accept("AND")) {
      c.expect("WAIT", COMPACT_FORM);
      wait = true;
    }
    String pool = c.accept("POOL") ? c.string("a pool name", COMPACT_FORM) : null;
    c.end(COMPACT_FORM);
    StringBuilder call = new StringBuilder("CALL ")
        .append(AcidProcedures.NAMESPACE).append(".compact(table => ").append(literal(table))
        .append(", type => ").append(literal(type))
        .append(", wait => ").append(wait);
    if (partition != null) {
      call.append(", partition => ").append(literal(partition));
    }
    if (pool != null) {
      call.append(", pool => ").append(literal(pool));
    }
    return call.append(')').toString();
  }

  private static String showCompactions(
      Cursor c, java.util.function.Supplier<String> currentDatabase) {
    String table = c.atEnd() ? null : c.tableName(currentDatabase, SHOW_FORM);
    c.end(SHOW_FORM);
    String args = table == null ? "" : "table => " + literal(table);
    return "CALL " + AcidProcedures.NAMESPACE + ".show_compactions(" + args + ")";
  }

  /** A Spark SQL string literal of {@code s}. */
  static String literal(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  /** Hive's FileUtils.escapePathName: %XX for the characters a partition name escapes. */
  static String escapePathName(String value) {
    StringBuilder out = new StringBuilder();
    for (char ch : value.toCharArray()) {
      if ((ch >= 0x01 && ch < 0x20) || "\"#%'*/:=?\\\u007f{[]^".indexOf(ch) >= 0) {
        out.append(String.format("%%%02X", (int) ch));
      } else {
        out.append(ch);
      }
    }
    return out.toString();
  }

  // ------------------------------------------------------------------ tokens

  /** A token: a word (an identifier or keyword), a `quoted` identifier, a string, a number or
   * one character of punctuation. */
  static final class Token {
    final char kind; // 'w' word, 'q' quoted identifier, 's' string, 'n' number, 'p' punctuation
    final String text;

    Token(char kind, String text) {
      this.kind = kind;
      this.text = text;
    }

    boolean isName() { return kind == 'w' || kind == 'q'; }
    boolean isWord(String w) { return kind == 'w' && text.equalsIgnoreCase(w); }
    boolean is(String p) { return kind == 'p' && text.equals(p); }
    String shown() { return kind == 's' ? literal(text) : kind == 'q' ? "`" + text + "`" : text; }
  }

  /** The tokens of {@code text} (comments skipped), or null if a literal or comment is not
   * closed. */
  static List<Token> tokens(String text) {
    List<Token> out = new ArrayList<>();
    int i = 0;
    int n = text.length();
    while (i < n) {
      char ch = text.charAt(i);
      if (Character.isWhitespace(ch)) {
        i++;
      } else if (text.startsWith("--", i)) {
        int end = text.indexOf('\n', i);
        i = end < 0 ? n : end + 1;
      } else if (text.startsWith("/*", i)) {
        int end = text.indexOf("*/", i + 2);
        if (end < 0) {
          return null;
        }
        i = end + 2;
      } else if (ch == '\'' || ch == '"' || ch == '`') {
        StringBuilder value = new StringBuilder();
        int j = i + 1;
        while (true) {
          if (j >= n) {
            return null;
          }
          char c = text.charAt(j);
          if (c == ch && ch == '`' && j + 1 < n && text.charAt(j + 1) == '`') {
            value.append('`');
            j += 2;
          } else if (c == ch) {
            break;
          } else if (c == '\\' && ch != '`' && j + 1 < n) {
            char e = text.charAt(j + 1);
            value.append(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e);
            j += 2;
          } else {
            value.append(c);
            j++;
          }
        }
        out.add(new Token(ch == '`' ? 'q' : 's', value.toString()));
        i = j + 1;
      } else if (Character.isLetter(ch) || ch == '_') {
        int j = i;
        while (j < n && (Character.isLetterOrDigit(text.charAt(j)) || text.charAt(j) == '_')) {
          j++;
        }
        out.add(new Token('w', text.substring(i, j)));
        i = j;
      } else if (Character.isDigit(ch)) {
        int j = i;
        while (j < n && (Character.isLetterOrDigit(text.charAt(j)) || text.charAt(j) == '.')) {
          j++;
        }
        out.add(new Token('n', text.substring(i, j)));
        i = j;
      } else {
        out.add(new Token('p', String.valueOf(ch)));
        i++;
      }
    }
    while (!out.isEmpty() && out.get(out.size() - 1).is(";")) {
      out.remove(out.size() - 1);
    }
    return out;
  }

  /** Reads tokens; an unexpected one fails the statement with one line. */
  static final class Cursor {
    final List<Token> tokens;
    int pos;

    Cursor(List<Token> tokens) {
      this.tokens = tokens;
    }

    boolean atEnd() { return pos >= tokens.size(); }

    Token peek() { return atEnd() ? null : tokens.get(pos); }

    boolean accept(String word) {
      if (!atEnd() && peek().isWord(word)) {
        pos++;
        return true;
      }
      return false;
    }

    boolean acceptPunct(String p) {
      if (!atEnd() && peek().is(p)) {
        pos++;
        return true;
      }
      return false;
    }

    IllegalArgumentException error(String expected, String form) {
      String found = atEnd() ? "the end" : "'" + peek().shown() + "'";
      return new IllegalArgumentException(
          "expected " + expected + ", not " + found + "; Spark SQL takes " + form);
    }

    void expect(String word, String form) {
      if (!accept(word)) {
        throw error(word, form);
      }
    }

    void end(String form) {
      if (!atEnd()) {
        throw error("the end of the statement", form);
      }
    }

    String name(String what, String form) {
      if (atEnd() || !peek().isName()) {
        throw error(what, form);
      }
      Token t = tokens.get(pos++);
      return t.kind == 'q' ? t.text : t.text.toLowerCase(Locale.ROOT);
    }

    String string(String what, String form) {
      if (atEnd() || peek().kind != 's') {
        throw error(what, form);
      }
      return tokens.get(pos++).text;
    }

    /** [catalog.][db.]table as db.table: the current database if none, the session catalog's
     * tables only. */
    String tableName(java.util.function.Supplier<String> currentDatabase, String form) {
      List<String> parts = new ArrayList<>();
      parts.add(name("a table name", form));
      while (acceptPunct(".")) {
        parts.add(name("a name after '.'", form));
      }
      if (parts.size() == 3 && parts.get(0).equalsIgnoreCase(SESSION_CATALOG)) {
        parts.remove(0);
      }
      if (parts.size() > 2) {
        throw new IllegalArgumentException("NoSuchObjectError: table " + String.join(".", parts)
            + " is not in the session catalog (" + SESSION_CATALOG
            + "), which holds the warehouse's tables");
      }
      return (parts.size() == 1 ? currentDatabase.get() : parts.get(0)) + "." + parts.get(parts.size() - 1);
    }

    /** After PARTITION: (c = v, ...) as the partition's name, c=v/... with Hive's escapes. */
    String partitionSpec() {
      String form = COMPACT_FORM;
      if (!acceptPunct("(")) {
        throw error("'(' after PARTITION", form);
      }
      List<String> parts = new ArrayList<>();
      do {
        String column = name("a partition column", form);
        if (!acceptPunct("=")) {
          throw error("'=' after partition column " + column, form);
        }
        parts.add(column + "=" + escapePathName(value(form)));
      } while (acceptPunct(","));
      if (!acceptPunct(")")) {
        throw error("',' or ')' in the partition spec", form);
      }
      return String.join("/", parts);
    }

    /** A partition value: a string, a number (signed), or a typed literal (DATE '...'). */
    private String value(String form) {
      String sign = acceptPunct("-") ? "-" : acceptPunct("+") ? "" : null;
      Token t = peek();
      if (t != null && t.kind == 'n') {
        pos++;
        return (sign == null ? "" : sign) + t.text;
      }
      if (sign == null && t != null && t.kind == 'w' && pos + 1 < tokens.size()
          && tokens.get(pos + 1).kind == 's') {
        pos++; // DATE '2024-01-01', TIMESTAMP '...': the literal's text
        t = peek();
      }
      if (sign == null && t != null && t.kind == 's') {
        pos++;
        return t.text;
      }
      throw error("a partition value (a string or a number)", form);
    }
  }
}
