#!/usr/bin/env bash
# Issue 7's browser check: renders real reports (tune, what-if, validate) in headless Chromium and
# checks, in the DOM Chromium built, that every plot is an inline SVG with data drawn, axes
# labelled and a legend where there are several series; that no image is broken and no plot was
# replaced by a failure note. Leaves a screenshot of each page beside the reports.
#   tests/report_browser.sh NCCLZ_BINARY SOURCE_DIR OUT_DIR
set -u
NCCLZ=$1 SRC=$2 OUT=$3
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
  echo "SKIP: no chromium (Debian: apt-get install chromium); the report browser check needs it"
  exit 77
fi
mkdir -p "$OUT"
passed=0 failed=0
check() { if eval "$1"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi; }

# A scenario's report, or the codec report (scripts/codec_report.sh over the test slices).
make_report() {
  if [ "$1" = codec-report ]; then NCCLZ=$NCCLZ "$SRC/scripts/codec_report.sh" "$SRC/tests/data" "$2"
  else "$NCCLZ" run "$SRC/scenarios/$1.json" --out "$2"; fi
}

for s in whatif-1024 tune-default paper-fig5 validate-h200 codec-report; do
  dir=$OUT/$s
  rm -rf "$dir"
  if ! make_report "$s" "$dir" >/dev/null 2>"$OUT/$s.err"; then
    failed=$((failed + 1)); echo "FAIL: ncclz run $s: $(tail -1 "$OUT/$s.err")"; continue
  fi
  dom=$OUT/$s.dom.html
  "$BROWSER" --headless --no-sandbox --disable-gpu --dump-dom "file://$dir/index.html" >"$dom" 2>/dev/null
  "$BROWSER" --headless --no-sandbox --disable-gpu --window-size=1280,2400 --screenshot="$dir/screenshot.png" \
    "file://$dir/index.html" >/dev/null 2>&1
  svgs=$(grep -o '<svg' "$dom" | wc -l)
  files=$(ls "$dir"/*.svg 2>/dev/null | wc -l)
  check '[ "$svgs" -ge 1 ] && [ "$svgs" -ge "$files" ]' "$s: $svgs inline SVG plots for $files SVG files"
  check '! grep -q "gnuplot failed on this plot\|no data to plot\|gnuplot was not found" "$dom"' "$s: a plot is missing or empty"
  # Each plot draws data (gnuplot paths with many points) and labels its axes.
  for f in "$dir"/*.svg; do
    [ -e "$f" ] || continue
    check '[ "$(grep -c "<path" "$f")" -ge 3 ]' "$s: $(basename "$f") draws no data"
    check '[ "$(grep -o "<text" "$f" | wc -l)" -ge 4 ]' "$s: $(basename "$f") has no axis labels"
  done
  # No broken image: every <img> source exists next to the page.
  for src in $(grep -o '<img[^>]*src="[^"]*"' "$dom" | sed 's/.*src="\([^"]*\)"/\1/'); do
    check '[ -e "$dir/$src" ]' "$s: broken image $src"
  done
  check '[ -s "$dir/screenshot.png" ]' "$s: no screenshot"
  # The first screen (1400x900) answers the page's question: for a what-if, the first section is the
  # answer and the first plot its heatmap.
  "$BROWSER" --headless --no-sandbox --disable-gpu --window-size=1400,900 --screenshot="$dir/first-screen.png" \
    "file://$dir/index.html" >/dev/null 2>&1
  if [ "$s" = whatif-1024 ]; then
    check '[ "$(grep -o "<h2>[^<]*" "$dom" | head -1)" = "<h2>Answer: speedup over plain NCCL" ]' "$s: the page does not open with the answer"
    check 'grep -o "<a href=\"[a-z_0-9]*\.svg\"" "$dom" | head -1 | grep -q answer_heatmap' "$s: the first plot is not the answer's heatmap"
    check '! grep -q "series shown of" "$dom"' "$s: a plot leaves series out"
  fi
  # Every report is an HTML page of the same kind: no markdown table, no stray error file.
  check '[ -z "$(ls "$dir"/*.md "$dir"/*.err 2>/dev/null)" ]' "$s: a markdown or .err file beside the page"
done
echo "report_browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
