#!/usr/bin/env bash
# Source comments say why in a line; commit hashes and dates belong in git and docs/results.md.
# Scans the comments of the tracked C/CUDA (/* */, //), shell, Python and CMake (#) sources for
# commit-hash-like tokens (7-40 lowercase hex digits with a letter and a digit, a word of their own,
# not a float's digits) and ISO dates (YYYY-MM-DD, YYYY-MM); prints file:line: token for each and
# exits 1 if any. Python docstrings are strings, not comments, and are not scanned.
# Usage: bash scripts/check_comments.sh [FILE...]   (paths from the repository root; default: every
# tracked source file outside bench/results/)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then
  files=("$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cu' '*.cuh' '*.sh' '*.py' '*.cmake' 'CMakeLists.txt' \
    '*/CMakeLists.txt' ':!bench/results/')
else
  mapfile -t files < <(find . -path ./bench/results -prune -o -path './build*' -prune -o -path './.*' -prune -o -type f \
    \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.sh' -o -name '*.py' -o -name '*.cmake' \
    -o -name CMakeLists.txt \) -print | sed 's|^\./||' | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "check_comments: no source files found" >&2; exit 1; }

# One awk program: prints "file:line<TAB>comment text" for every line that holds comment text.
# Language by name: C-like (.c .h .cu .cuh) or hash-commented (shell, Python, CMake).
extract='
FNR == 1 { blk = 0; q = ""; lang = "c"
  if (FILENAME ~ /\.(sh|bash)$/) lang = "sh"; else if (FILENAME ~ /\.py$/) lang = "py"
  else if (FILENAME ~ /(CMakeLists\.txt|\.cmake)$/) lang = "cmake" }
lang == "c" { c_line($0); next }
{ hash_line($0) }
function emit(text) { if (text ~ /[0-9]/) printf "%s:%d\t%s\n", FILENAME, FNR, text }
# C and CUDA: block comments span lines; strings and character literals end at the line end.
function c_line(s,   i, n, ch, two, text, str) {
  if (!blk && index(s, "/") == 0) return
  n = length(s); text = ""; str = ""
  for (i = 1; i <= n; i++) {
    ch = substr(s, i, 1); two = substr(s, i, 2)
    if (blk) { if (two == "*/") { blk = 0; i++; text = text " " } else text = text ch; continue }
    if (str != "") { if (ch == "\\") i++; else if (ch == str) str = ""; continue }
    if (ch == "\"" || ch == sq) { str = ch; continue }
    if (two == "//") { text = text " " substr(s, i + 2); break }
    if (two == "/*") { blk = 1; i++ }
  }
  emit(text)
}
# Shell, Python, CMake: a # outside quotes starts a comment (in shell only as a word of its own);
# quoted strings may span lines (Python: triple quotes only).
function hash_line(s,   i, n, ch, prev, three) {
  n = length(s)
  for (i = 1; i <= n; i++) {
    ch = substr(s, i, 1)
    if (q != "") {
      if (lang == "py" && length(q) == 3) { if (substr(s, i, 3) == q) { q = ""; i += 2 } else if (ch == "\\") i++; continue }
      if (ch == "\\" && !(lang == "sh" && q == sq)) i++; else if (ch == q) q = ""
      continue
    }
    if (ch == "\\") { i++; continue }
    if (lang == "py") { three = substr(s, i, 3); if (three == "\"\"\"" || three == sq sq sq) { q = three; i += 2; continue } }
    if (ch == "\"" || (ch == sq && lang != "cmake")) { q = ch; continue }
    if (ch == "#") {
      prev = i > 1 ? substr(s, i - 1, 1) : " "
      if (lang != "sh" || prev ~ /[ \t;(|&]/) { emit(substr(s, i + 1)); return }
    }
  }
  if (lang == "py" && length(q) == 1) q = ""   # a Python one-quote string ends at its line
}
'

# Second pass: the tokens. Hash-like: a word of 7-40 lowercase hex digits with both a letter and a
# digit, not after "." (a float such as 9.96921e36); 0x... and longer identifiers are other words.
find_tokens='
BEGIN { FS = "\t" }
{ where = $1; text = $2; rest = text; off = 0
  while (match(rest, /[0-9A-Za-z_]+/)) {
    w = substr(rest, RSTART, RLENGTH); before = substr(text, off + RSTART - 1, 1)
    if (w ~ /^[0-9a-f]+$/ && length(w) >= 7 && length(w) <= 40 && w ~ /[a-f]/ && w ~ /[0-9]/ && before != ".")
      { print where ": commit-hash-like " w; bad = 1 }
    off += RSTART + RLENGTH - 1; rest = substr(rest, RSTART + RLENGTH)
  }
  rest = text
  while (match(rest, /(19|20)[0-9][0-9]-(0[1-9]|1[0-2])(-[0-3][0-9])?/)) {
    d = substr(rest, RSTART, RLENGTH); after = substr(rest, RSTART + RLENGTH, 1)
    if (after !~ /[0-9]/ && substr(rest, RSTART - 1, 1) !~ /[0-9]/) { print where ": date " d; bad = 1 }
    rest = substr(rest, RSTART + RLENGTH)
  }
}
END { exit bad }
'

if awk -v sq="'" "$extract" "${files[@]}" | awk "$find_tokens"; then
  echo "check_comments: ${#files[@]} files, no commit hash or date in a comment"
else
  echo "check_comments: say why in the comment; hashes and dates go in git and docs/results.md" >&2
  exit 1
fi
