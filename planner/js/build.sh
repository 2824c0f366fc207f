#!/usr/bin/env bash
# Builds the planner as WebAssembly (features `wasm` and `allocator`) and packages it with the
# installed wasm-bindgen CLI: pkg-node/ (`--target nodejs`) and pkg-bundler/ (`--target bundler`).
#
#   planner/js/build.sh            # release profile (fast code, for tests and benchmarks)
#   PROFILE=wasm-release build.sh  # the console's size-first profile
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
profile="${PROFILE:-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

wasm_bindgen="$(command -v wasm-bindgen || true)"
if [[ -z "$wasm_bindgen" && -x "$HOME/.cargo/bin/wasm-bindgen" ]]; then
  wasm_bindgen="$HOME/.cargo/bin/wasm-bindgen"
fi
if [[ -z "$wasm_bindgen" ]]; then
  echo "build.sh: wasm-bindgen not found; scripts/setup installs it (cargo install wasm-bindgen-cli)" >&2
  exit 1
fi
# The CLI must be the exact version of the wasm-bindgen crate in Cargo.lock.
want="$(grep -A1 '^name = "wasm-bindgen"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"/\1/p')"
have="$("$wasm_bindgen" --version | awk '{print $2}')"
if [[ -n "$want" && "$want" != "$have" ]]; then
  echo "build.sh: wasm-bindgen CLI $have does not match the crate's $want" >&2
  exit 1
fi

# opt-level 2, not the release profile's 3: V8 runs the planner 5 to 10% faster from it
# (README.md, "Optimization level"). Native builds keep 3.
CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-fat}" CARGO_PROFILE_RELEASE_CODEGEN_UNITS="${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-1}" \
  CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-2}" cargo build --manifest-path "$root/Cargo.toml" -p planner --features wasm,allocator \
  --target wasm32-unknown-unknown --profile "$profile"
wasm="$target_dir/wasm32-unknown-unknown/$profile/planner.wasm"

for target in nodejs bundler; do
  out="$here/pkg-${target/nodejs/node}"
  rm -rf "$out"
  "$wasm_bindgen" --target "$target" --out-dir "$out" "$wasm"
done

# Package manifests: Node loads pkg-node as CommonJS; bundlers take pkg-bundler as ES modules.
manifest() {
  cat >"$1/package.json" <<JSON
{
  "name": "@better-compute/planner",
  "version": "$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)",
  "description": "FleetConfig's planner: validate, plan and planHash, as WebAssembly",
  "license": "Apache-2.0",
  "type": "$2",
  "main": "planner.js",
  "types": "planner.d.ts",
  "files": ["planner.js", "planner.d.ts", "planner_bg.wasm", "planner_bg.wasm.d.ts",$3 "snippets/"],
  "sideEffects": ["./planner.js"]
}
JSON
}
# The bundler target's glue has a second module, planner_bg.js; Node's has none.
manifest "$here/pkg-node" commonjs ""
manifest "$here/pkg-bundler" module ' "planner_bg.js",'
# The planner's JS snippet (it builds a plan's changes) is written as an ES module, which the
# CommonJS glue of pkg-node requires: written out as CommonJS there, so that any Node loads it
# (the snippet's only exports are top-level `export function`s).
for snippet in "$here"/pkg-node/snippets/*/*.js; do
  sed -i -E 's/^export function ([A-Za-z0-9_]+)/exports.\1 = function \1/' "$snippet"
  if grep -q '^export ' "$snippet"; then
    echo "build.sh: $snippet has an export this script cannot write as CommonJS" >&2
    exit 1
  fi
done

# wasm-opt (binaryen) where it is installed: a few percent faster code.
wasm_opt="$(command -v wasm-opt || true)"
if [[ -z "$wasm_opt" && -x "$HOME/.cache/better-compute/node_modules/.bin/wasm-opt" ]]; then
  wasm_opt="$HOME/.cache/better-compute/node_modules/.bin/wasm-opt"
fi
if [[ -n "$wasm_opt" ]]; then
  for out in "$here/pkg-node" "$here/pkg-bundler"; do
    "$wasm_opt" -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals "$out/planner_bg.wasm" -o "$out/planner_bg.wasm"
  done
fi
echo "build.sh: packaged $(du -h "$here/pkg-node/planner_bg.wasm" | cut -f1) of wasm into pkg-node/ and pkg-bundler/"
