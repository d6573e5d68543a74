#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the golden transcripts and the bundled recipes
# (docs/fuzzing.md). Hand-written seeds live in fuzz/seeds/<target>/ and are passed too.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
corpus="$here/corpus"
for target in oracle argv_scan vm_toml recipe_toml stoat_toml checksum snapshot_table transcript qmp; do
  mkdir -p "$corpus/$target" "$here/seeds/$target"
done
for manifest in "$repo"/impl/core/bundled/recipes/*/recipe.toml; do
  [ -f "$manifest" ] && cp "$manifest" "$corpus/recipe_toml/bundled-$(basename "$(dirname "$manifest")")"
done
if ! command -v python3 >/dev/null; then
  # Without python3 the transcripts still seed the transcript target as they are.
  find "$repo/golden" -name '*.json' -exec cp {} "$corpus/transcript/" \;
  exit 0
fi
python3 - "$repo/golden" "$corpus" <<'PY'
import hashlib, json, pathlib, sys
golden, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    name = "golden-" + hashlib.sha1(data).hexdigest()[:16]
    (corpus / target / name).write_bytes(data)
for path in sorted(golden.rglob("*.json")):
    text = path.read_text()
    put("transcript", text)
    case = json.loads(text)
    put("argv_scan", "\0".join(case.get("argv", [])))
    stdout = "".join(json.dumps(line) + "\n" for line in case.get("lines", []))
    put("oracle", bytes([case.get("exit", 0) % 250]) + stdout.encode())
    for name, content in case.get("fixture", {}).items():
        if name.endswith("vm.toml") and isinstance(content, str):
            put("vm_toml", content)
PY
