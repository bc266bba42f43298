#!/usr/bin/env bash
# Builds PPipe's Java cluster simulator (the `cluster-sim/` folder of the PPipe artifact, a
# checkout the user provides) with Debian's JDK and Debian's jars, outside this project, so
# that scripts/ppipe-java-compare.sh can run it beside `tessera ppipe-simulate`.
#
#   scripts/ppipe-java-build.sh CLUSTER_SIM_DIR OUT_DIR
#
# CLUSTER_SIM_DIR is the artifact's cluster-sim/ folder (with src/main/java); OUT_DIR gets
# classes/ and a file `classpath`. Nothing of the artifact is copied into this project.
#
# Three of its dependencies are not packaged by Debian 12 as it needs them: Tablesaw (it
# reads the block timing CSVs with it), jackson-dataformat-csv (it writes its request logs
# with it) and json.org's org.json (Debian's Android rewrite throws checked exceptions).
# This script writes small stand-ins of our own for the few calls the simulator makes
# (tech.tablesaw: read a header-less or headed numeric CSV, sum a column over a row range;
# CsvMapper: write a list of beans as CSV with a header; org.json: read the plan; the
# last two over Debian's jackson-databind), so the simulator's own sources compile
# unchanged.
#
# Debian packages it needs (installed when missing, as root):
#   default-jdk-headless liblombok-java libjackson2-databind-java libpicocli-java
#   libfastutil-java libslf4j-java
set -euo pipefail

SRC="${1:?usage: ppipe-java-build.sh CLUSTER_SIM_DIR OUT_DIR}"
OUT="${2:?usage: ppipe-java-build.sh CLUSTER_SIM_DIR OUT_DIR}"
[ -d "$SRC/src/main/java" ] || { echo "no src/main/java under $SRC" >&2; exit 1; }

PKGS=(default-jdk-headless liblombok-java libjackson2-databind-java libjackson2-annotations-java
  libjackson2-core-java libpicocli-java libfastutil-java libslf4j-java)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

J=/usr/share/java
CP="$J/picocli.jar:$J/fastutil.jar:$J/jackson-databind.jar"
CP="$CP:$J/jackson-core.jar:$J/jackson-annotations.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar"

mkdir -p "$OUT/shim/tech/tablesaw/api" "$OUT/shim/tech/tablesaw/io/csv" \
  "$OUT/shim/tech/tablesaw/selection" "$OUT/shim/com/fasterxml/jackson/dataformat/csv" \
  "$OUT/shim/org/json" \
  "$OUT/classes"
S="$OUT/shim"

# --- stand-in for the Tablesaw calls the simulator makes -------------------------------
cat >"$S/tech/tablesaw/io/csv/CsvReadOptions.java" <<'EOF'
package tech.tablesaw.io.csv;

import java.io.File;

/** Which file to read and whether its first line is a header. */
public final class CsvReadOptions {
    public final File file;
    public final boolean header;

    private CsvReadOptions(File file, boolean header) {
        this.file = file;
        this.header = header;
    }

    public static Builder builder(File file) { return new Builder(file); }

    public static Builder builder(String path) { return new Builder(new File(path)); }

    public static final class Builder {
        private final File file;
        private boolean header = true;

        Builder(File file) { this.file = file; }

        public Builder header(boolean h) {
            header = h;
            return this;
        }

        public CsvReadOptions build() { return new CsvReadOptions(file, header); }
    }
}
EOF
cat >"$S/tech/tablesaw/selection/Selection.java" <<'EOF'
package tech.tablesaw.selection;

/** A half-open row range [from, to). */
public final class Selection {
    public final int from;
    public final int to;

    private Selection(int from, int to) {
        this.from = from;
        this.to = to;
    }

    public static Selection withRange(int from, int to) { return new Selection(from, to); }
}
EOF
cat >"$S/tech/tablesaw/api/Column.java" <<'EOF'
package tech.tablesaw.api;

/** A named column of numbers (every CSV the simulator reads is numeric). */
public class Column {
    String name;
    final double[] values;

    Column(String name, double[] values) {
        this.name = name;
        this.values = values;
    }

    public Column setName(String n) {
        name = n;
        return this;
    }

    public int size() { return values.length; }
}
EOF
cat >"$S/tech/tablesaw/api/DoubleColumn.java" <<'EOF'
package tech.tablesaw.api;

public class DoubleColumn extends Column {
    DoubleColumn(String name, double[] values) { super(name, values); }

    public DoubleColumn subtract(DoubleColumn other) {
        double[] out = new double[values.length];
        for (int i = 0; i < out.length; i++) out[i] = values[i] - other.values[i];
        return new DoubleColumn(name, out);
    }

    public double[] asDoubleArray() { return values.clone(); }
}
EOF
cat >"$S/tech/tablesaw/api/IntColumn.java" <<'EOF'
package tech.tablesaw.api;

import java.util.ArrayList;
import java.util.List;
import tech.tablesaw.selection.Selection;

public class IntColumn {
    private final int[] values;

    IntColumn(double[] v) {
        values = new int[v.length];
        for (int i = 0; i < v.length; i++) values[i] = (int) Math.round(v[i]);
    }

    private IntColumn(int[] v) { values = v; }

    public int size() { return values.length; }

    public int get(int i) { return values[i]; }

    public List<Integer> asList() {
        List<Integer> out = new ArrayList<>();
        for (int v : values) out.add(v);
        return out;
    }

    public IntColumn where(Selection s) {
        int[] out = new int[Math.max(0, s.to - s.from)];
        System.arraycopy(values, s.from, out, 0, out.length);
        return new IntColumn(out);
    }

    public double sum() {
        double s = 0;
        for (int v : values) s += v;
        return s;
    }
}
EOF
cat >"$S/tech/tablesaw/api/Row.java" <<'EOF'
package tech.tablesaw.api;

public class Row {
    private final Table table;
    private final int row;

    Row(Table table, int row) {
        this.table = table;
        this.row = row;
    }

    public int getInt(int col) { return (int) Math.round(table.columns.get(col).values[row]); }

    public double getDouble(int col) { return table.columns.get(col).values[row]; }
}
EOF
cat >"$S/tech/tablesaw/api/Table.java" <<'EOF'
package tech.tablesaw.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import tech.tablesaw.io.csv.CsvReadOptions;

/** A numeric CSV held by columns. */
public class Table {
    final List<Column> columns = new ArrayList<>();

    public static Reader read() { return new Reader(); }

    public static Table create(Column... cols) {
        Table t = new Table();
        for (Column c : cols) t.columns.add(c);
        return t;
    }

    public static final class Reader {
        public Table csv(CsvReadOptions o) {
            List<String> lines;
            try {
                lines = Files.readAllLines(o.file.toPath());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            lines.removeIf(l -> l.isBlank());
            String[] names = null;
            if (o.header && !lines.isEmpty()) names = lines.remove(0).split(",", -1);
            int cols = lines.isEmpty() ? 0 : lines.get(0).split(",", -1).length;
            double[][] v = new double[cols][lines.size()];
            for (int r = 0; r < lines.size(); r++) {
                String[] f = lines.get(r).split(",", -1);
                for (int c = 0; c < cols && c < f.length; c++) {
                    String s = f[c].trim();
                    v[c][r] = s.isEmpty() ? Double.NaN : Double.parseDouble(s);
                }
            }
            Table t = new Table();
            for (int c = 0; c < cols; c++) {
                String n = names != null && c < names.length ? names[c].trim() : "C" + c;
                t.columns.add(new DoubleColumn(n, v[c]));
            }
            return t;
        }
    }

    public int rowCount() { return columns.isEmpty() ? 0 : columns.get(0).size(); }

    public int columnCount() { return columns.size(); }

    public Column column(int i) { return columns.get(i); }

    public Column column(String name) {
        for (Column c : columns) {
            if (c.name.equals(name)) return c;
        }
        throw new IllegalArgumentException("no column " + name);
    }

    public IntColumn intColumn(int i) { return new IntColumn(columns.get(i).values); }

    public Row row(int i) { return new Row(this, i); }

    public Stream<Row> stream() { return IntStream.range(0, rowCount()).mapToObj(this::row); }
}
EOF

# --- stand-in for jackson-dataformat-csv's CsvMapper (writing only) -----------------------
cat >"$S/com/fasterxml/jackson/dataformat/csv/CsvMapper.java" <<'EOF'
package com.fasterxml.jackson.dataformat.csv;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/** Writes beans as CSV rows (their Jackson properties, unwrapped ones flattened). */
public class CsvMapper {
    private final ObjectMapper json =
            new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

    public Schema schemaFor(Class<?> type) { return new Schema(); }

    public Writer writer(Schema schema) { return new Writer(); }

    public static final class Schema {
        public Schema withHeader() { return this; }
    }

    public final class Writer {
        public Sequence writeValues(File file) throws IOException {
            return new Sequence(Files.newBufferedWriter(file.toPath()));
        }
    }

    public final class Sequence implements Closeable {
        private final BufferedWriter out;
        private List<String> header;

        Sequence(BufferedWriter out) { this.out = out; }

        public Sequence writeAll(Collection<?> rows) throws IOException {
            for (Object row : rows) {
                @SuppressWarnings("unchecked")
                Map<String, Object> m = json.convertValue(row, Map.class);
                if (header == null) {
                    header = new ArrayList<>(m.keySet());
                    out.write(String.join(",", header));
                    out.newLine();
                }
                StringBuilder line = new StringBuilder();
                for (int i = 0; i < header.size(); i++) {
                    if (i > 0) line.append(',');
                    Object v = m.get(header.get(i));
                    if (v != null) line.append(v);
                }
                out.write(line.toString());
                out.newLine();
            }
            return this;
        }

        @Override
        public void close() throws IOException { out.close(); }
    }
}
EOF

# --- stand-in for json.org's JSONObject / JSONArray (reading only) -----------------------
cat >"$S/org/json/JSONObject.java" <<'EOF'
package org.json;

import com.fasterxml.jackson.databind.JsonNode;

/** A JSON object; getters fail with an unchecked exception, as json.org's do. */
public class JSONObject {
    final JsonNode node;

    JSONObject(JsonNode node) { this.node = node; }

    JsonNode at(String key) {
        JsonNode v = node.get(key);
        if (v == null) throw new IllegalArgumentException("JSONObject[" + key + "] not found");
        return v;
    }

    public JSONObject getJSONObject(String key) { return new JSONObject(at(key)); }

    public JSONArray getJSONArray(String key) { return new JSONArray(at(key)); }

    public int getInt(String key) { return at(key).asInt(); }

    public double getDouble(String key) { return at(key).asDouble(); }

    public String getString(String key) { return at(key).asText(); }

    public Object get(String key) {
        JsonNode v = at(key);
        return v.isTextual() ? v.asText() : v.toString();
    }
}
EOF
cat >"$S/org/json/JSONArray.java" <<'EOF'
package org.json;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** A JSON array; getters fail with an unchecked exception, as json.org's do. */
public class JSONArray {
    final JsonNode node;

    JSONArray(JsonNode node) { this.node = node; }

    public JSONArray(String text) {
        try {
            node = new ObjectMapper().readTree(text);
        } catch (Exception e) {
            throw new IllegalArgumentException(e);
        }
    }

    JsonNode at(int i) {
        JsonNode v = node.get(i);
        if (v == null) throw new IllegalArgumentException("JSONArray[" + i + "] not found");
        return v;
    }

    public int length() { return node.size(); }

    public JSONObject getJSONObject(int i) { return new JSONObject(at(i)); }

    public JSONArray getJSONArray(int i) { return new JSONArray(at(i)); }

    public int getInt(int i) { return at(i).asInt(); }

    public double getDouble(int i) { return at(i).asDouble(); }
}
EOF

echo "==> compiling the stand-ins"
find "$S" -name '*.java' >"$OUT/shim-sources.txt"
javac -nowarn -d "$OUT/shim-classes" -cp "$CP" @"$OUT/shim-sources.txt"
echo "==> compiling $SRC (Lombok as annotation processor)"
find "$SRC/src/main/java" -name '*.java' >"$OUT/sources.txt"
javac -nowarn -d "$OUT/classes" -cp "$CP:$OUT/shim-classes:$J/lombok.jar" \
  -processorpath "$J/lombok.jar" @"$OUT/sources.txt"
echo "$OUT/classes:$OUT/shim-classes:$CP" >"$OUT/classpath"
echo "==> built: java -ea -cp \"\$(cat $OUT/classpath)\" edu.purdue.dsnl.clustersim.Main ilp_partitioned ..."
