#!/usr/bin/env bash
# The sanity row: `terraform plan -refresh=false` over the items of the benchmark pair as
# terraform_data resources (built in, no provider download), against a state applied from the
# export's config (the fleet that differs in one item in ten). Prints result rows.
#
#   terraform.sh PAIR_DIR WORK_DIR ROWS   (ROWS: this run's rows, for the native pipeline's time)
set -euo pipefail
pair=$1 dir=$2 rows=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$dir"
export TF_IN_AUTOMATION=1 TF_CLI_ARGS="-no-color" CHECKPOINT_DISABLE=1

# main.tf.json with one terraform_data per item of every list of the given document.
config() {
  node -e '
    const doc = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const config = doc.config ?? doc;
    const keys = { sites: (x) => x.name, providerAccounts: (x) => x.name, pools: (x) => x.name,
      flavors: (x) => `${x.pool}/${x.name}`, sandboxTemplates: (x) => x.name };
    const resources = {};
    for (const [list, key] of Object.entries(keys)) {
      for (const item of config[list] ?? []) {
        resources[`${list}_${key(item)}`.replace(/[^A-Za-z0-9_-]/g, "_")] = { input: item };
      }
    }
    console.log(JSON.stringify({ resource: { terraform_data: resources } }));' "$1" >"$dir/main.tf.json"
}

config "$pair/export.json"
(cd "$dir" && terraform init -input=false >/dev/null)
started=$(date +%s%N)
(cd "$dir" && terraform apply -input=false -auto-approve -refresh=false -parallelism=32 >"$dir/apply.log")
apply_ms=$((($(date +%s%N) - started) / 1000000))
config "$pair/document.json"
count=$(node -e 'console.log(Object.keys(JSON.parse(require("fs").readFileSync(process.argv[1])).resource.terraform_data).length)' "$dir/main.tf.json")
times=()
for _ in 1 2 3; do
  started=$(date +%s%N)
  (cd "$dir" && terraform plan -input=false -refresh=false -lock=false >"$dir/plan.log")
  times+=($((($(date +%s%N) - started) / 1000000)))
done
plan_ms=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
summary=$(grep -E '^Plan:' "$dir/plan.log" || echo "Plan: ?")
node -e '
  const [planMs, applyMs, count, summary, rowsFile] = process.argv.slice(1);
  const rows = require("fs").readFileSync(rowsFile, "utf8").split("\n").filter(Boolean).map(JSON.parse);
  const native = rows.find((r) => r.section === "planner-native" && r.name === "validate + read export + plan + planHash");
  const out = (r) => console.log(JSON.stringify({ section: "terraform", ...r }));
  out({ name: `terraform apply of the changed fleet (${count} terraform_data, once)`, ms: Number(applyMs) });
  const row = { name: `terraform plan -refresh=false (${summary.replace(/^Plan: /, "")})`, ms: Number(planMs) };
  if (native) Object.assign(row, { ratio: Number(planMs) / native.ms, peer: "the native planner pipeline" });
  out(row);' "$plan_ms" "$apply_ms" "$count" "$summary" "$rows"
