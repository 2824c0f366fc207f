#!/usr/bin/env bash
# The sanity row: `terraform plan -refresh=false` over the items of a benchmark pair as
# terraform_data resources (built in, no provider download), against a state applied from the
# export's config (the fleet that differs in one item in ten). Prints result rows.
#
#   terraform.sh FLEET_BENCH WORK_DIR ROWS   (ROWS: this run's rows, for the native pipeline)
#
# BENCH_TERRAFORM_ITEMS items per list (100): terraform applies about 3 resources a second on
# a loaded 2-core machine, so the maximal pair's 5,000 would take half an hour to set up; the
# ratio is per item against the native pipeline on the maximal pair (5,000 items).
set -euo pipefail
fleet_bench=$1 dir=$2 rows=$3
items=${BENCH_TERRAFORM_ITEMS:-100}
mkdir -p "$dir"
pair=$dir/pair
"$fleet_bench" fixture "$pair" "$items"
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
  out({ name: `terraform apply of the changed fleet (once; the plan has ${count} terraform_data)`, ms: Number(applyMs) });
  const row = { name: `terraform plan -refresh=false (${summary.replace(/^Plan: /, "")})`, ms: Number(planMs) };
  // Per item: the native pipeline plans the maximal document, 5 lists of 1000 items.
  if (native) Object.assign(row, { ratio: (Number(planMs) / Number(count)) / (native.ms / 5000), peer: "the native pipeline, per item" });
  out(row);' "$plan_ms" "$apply_ms" "$count" "$summary" "$rows"
