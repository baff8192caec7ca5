#!/usr/bin/env bash
# Validates every manifest `aiperf kube generate` writes against the Kubernetes API schemas,
# without a cluster: a throw-away venv with the `kubernetes-validate` package from PyPI,
# strict mode (unknown fields are errors), for the oldest and the newest Kubernetes version
# it knows. A deliberately broken manifest must fail first, so a validator that accepts
# everything cannot pass this script.
#
#   bench/validate_kube.sh            (AIPERF=path/to/aiperf to use a built binary)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS=(${KUBE_VERSIONS:-1.25.0 1.37.0})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ -z "${AIPERF:-}" ]]; then
    cargo build -q -p aiperf-cli
    AIPERF=target/debug/aiperf
fi
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q kubernetes-validate==1.37.0
validate() { "$work/venv/bin/kubernetes-validate" --strict -k "$1" "$2"; }

generate() { # NAME, then aiperf kube generate arguments
    local name=$1
    shift
    "$AIPERF" kube generate --start-at 2026-11-26T10:00:00Z "$@" >"$work/$name.yaml"
}
generate minimal -m m --shards 1
generate concurrency -m Qwen/Qwen3-0.6B --url http://vllm.inference.svc:8000 --streaming \
    --concurrency 1000 --request-count 200000 --shards 8 --name qwen-bench \
    --namespace bench --image registry.example.com/aiperf-rs:0.1.0 \
    --results-pvc shared-results --api-key-secret inference-key
generate rate -m m --request-rate 500 --benchmark-duration 300 --shards 3 \
    --no-anti-affinity --cpu-request 2 --memory-request 1Gi
cat >"$work/config.yaml" <<'YAML'
schemaVersion: "2.0"
benchmark:
  model: m
  endpoint:
    url: http://server:8000
  phases:
    type: concurrency
    concurrency: 64
    requests: 5000
YAML
generate config-file -f "$work/config.yaml" --shards 4 --name from-file

# The control: a Job whose completionMode is not a string must be refused.
sed 's/completionMode: Indexed/completionMode: 7/' "$work/minimal.yaml" >"$work/broken.yaml"
if validate "${VERSIONS[0]}" "$work/broken.yaml" >/dev/null 2>&1; then
    echo "FAIL: the validator accepted a broken manifest" >&2
    exit 1
fi
echo "control: a broken manifest is refused"

failed=0
for file in minimal concurrency rate config-file; do
    for version in "${VERSIONS[@]}"; do
        if ! validate "$version" "$work/$file.yaml"; then
            failed=1
        fi
    done
done
if [[ $failed -ne 0 ]]; then
    echo "FAIL: some manifests do not validate" >&2
    exit 1
fi
echo "all manifests valid against Kubernetes ${VERSIONS[*]}"
