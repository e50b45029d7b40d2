# bash completion for gpusort(1): its options (those `gpusort --help` lists), their values, and
# file names for operands and file options. Installed as
# share/bash-completion/completions/gpusort, where bash-completion loads it the first time
# gpusort is completed; it needs nothing from bash-completion, so `source` works as well.

# The options gpusort takes, as --help lists them (tests/completion checks that they agree).
_gpusort_long_options="--type --record-size --key-offset --format --key --reverse --stable
  --unique --check --merge --buffer-size --temporary-directory --parallel --devices --algorithm
  --gpu-memory --merge-on --direct-io --output --fsync --stats --trace --verbose --progress
  --no-fork --help --version"
_gpusort_short_options="-t -r -s -u -c -C -m -S -T -o -v -h"

# COMPREPLY from the words in $1 that start with $2.
_gpusort_words() {
  mapfile -t COMPREPLY < <(compgen -W "$1" -- "$2")
}

# COMPREPLY from the names that start with $2: files with $1 = -f, directories with -d.
_gpusort_files() {
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen "$1" -- "$2")
}

# The GPUs present, by index (nothing without nvidia-smi).
_gpusort_device_ids() {
  command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null
}

# Completes the value of option $1 that starts with $2; returns 1 for an option without values.
_gpusort_value() {
  case $1 in
    -t | --type)
      _gpusort_words "u32 u64 i32 i64 f32 f64 bytes:" "$2"
      [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *: ]] && compopt -o nospace 2>/dev/null
      ;;
    --format) _gpusort_words "u32 u64 i32 i64 f32 f64 kv64 gensort" "$2" ;;
    --devices) _gpusort_words "all auto none $(_gpusort_device_ids)" "$2" ;;
    --algorithm) _gpusort_words "auto hrs onesweep cpu" "$2" ;;
    --merge-on) _gpusort_words "auto gpu host" "$2" ;;
    --direct-io) _gpusort_words "auto always never" "$2" ;;
    --check) _gpusort_words "diagnose-first quiet silent" "$2" ;;
    --stats) _gpusort_words "json" "$2" ;;
    -T | --temporary-directory) _gpusort_files -d "$2" ;;
    -o | --output | --trace) _gpusort_files -f "$2" ;;
    -S | --buffer-size | --gpu-memory | --parallel | --record-size | --key-offset | --key)
      COMPREPLY=() ;;  # numbers, sizes and .npy field names: nothing to offer
    *) return 1 ;;
  esac
  return 0
}

_gpusort() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()

  # After "--" every word is a file.
  local i
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ ${COMP_WORDS[i]} == -- ]]; then
      _gpusort_files -f "$cur"
      return 0
    fi
  done

  # --opt=value: bash splits it at '=' into "--opt" "=" "value" (when '=' breaks words, the
  # default), else it arrives whole.
  if [[ $cur == = ]]; then
    _gpusort_value "$prev" ""
    return 0
  elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
    _gpusort_value "${COMP_WORDS[COMP_CWORD - 2]}" "$cur"
    return 0
  elif [[ $cur == --*=* ]]; then
    local value=${cur#*=}
    _gpusort_value "${cur%%=*}" "$value" &&
      COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
    return 0
  fi

  # A value in a word of its own; --check and --stats take theirs only after '='.
  case $prev in
    --check | --stats) ;;
    *) _gpusort_value "$prev" "$cur" && return 0 ;;
  esac

  if [[ $cur == -* ]]; then
    _gpusort_words "$_gpusort_long_options $_gpusort_short_options" "$cur"
    return 0
  fi
  _gpusort_files -f "$cur"
}

complete -F _gpusort gpusort
