#!/usr/bin/env bash
# Installs ai-dynamo + ai-dynamo-runtime 1.2.1 and 1.6.1 from PyPI into cached virtualenvs,
# and generates a tiny local tokenizer for the CPU mocker (no model hub needed).
#
#   scripts/dynamo-install.sh [cache-dir]     (default: ~/.cache/worker-dynamo-e2e)
#
# A plain `pip install ai-dynamo` fails here: 1.6.1 depends on an NVIDIA stub package that
# downloads from a host outside PyPI, and pins a certifi release PyPI does not have. So the
# two Dynamo wheels go in with --no-deps and their runtime dependencies are listed explicitly.
set -euo pipefail

CACHE=${1:-${WORKER_DYNAMO_CACHE:-$HOME/.cache/worker-dynamo-e2e}}
PYTHON=${PYTHON:-python3}
mkdir -p "$CACHE"

common_deps=(
  "aiohttp<4,>=3.9" "kubernetes<33,>=32.0.1" "msgspec>=0.19" "prometheus-client<1,>=0.23.1"
  "pyzmq>=26" "transformers>=4.56" "typing-extensions>=4.10" "uvloop>=0.21" "tokenizers"
)

install() {
  local version=$1 venv=$CACHE/v${1//./}
  shift
  if [ -f "$venv/.complete" ]; then
    echo "dynamo $version: cached in $venv"
    return
  fi
  echo "dynamo $version: installing into $venv"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    "ai-dynamo-runtime==$version" "ai-dynamo==$version"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${common_deps[@]}" "$@"
  "$venv/bin/python" -c "import dynamo.frontend, dynamo.mocker" 2>/dev/null \
    || "$venv/bin/python" -c "import dynamo" # the modules import their heavy parts lazily
  touch "$venv/.complete"
}

# Version-specific pins. 1.6.1's `aisimulate` (only used by its planner) is left out, and its
# certifi pin is one release ahead of PyPI; the newest published certifi works.
install 1.2.1 "msgpack==1.1.2" "pydantic>=2.10.6,<=2.13"
install 1.6.1 "msgpack>=1.1" "pydantic>=2.10.6,<=2.13.5" "certifi<=2026.10.18" "redis<9" tqdm "zstandard<1"

# A 300-token byte-level BPE tokenizer with a chat template, written locally.
TOKENIZER=$CACHE/tinymodel
if [ ! -f "$TOKENIZER/tokenizer.json" ]; then
  mkdir -p "$TOKENIZER"
  "$CACHE/v121/bin/python" - "$TOKENIZER" <<'PY'
import json, sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
out = sys.argv[1]
tok = Tokenizer(models.BPE(unk_token=None))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
corpus = ["hello world", "the quick brown fox jumps over the lazy dog",
          "list the files and read the readme", "tool call result assistant user system"] * 50
trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(corpus, trainer)
tok.save(f"{out}/tokenizer.json")
vocab = tok.get_vocab_size()
json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
           "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 1,
           "max_position_embeddings": 4096, "bos_token_id": 0, "eos_token_id": 1},
          open(f"{out}/config.json", "w"))
json.dump({"bos_token": "<s>", "eos_token": "</s>", "model_max_length": 4096,
           "tokenizer_class": "PreTrainedTokenizerFast",
           "chat_template": "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"},
          open(f"{out}/tokenizer_config.json", "w"))
json.dump({"bos_token_id": 0, "eos_token_id": 1}, open(f"{out}/generation_config.json", "w"))
print("tokenizer:", out, "vocab", vocab)
PY
fi
echo "ready: $CACHE"
