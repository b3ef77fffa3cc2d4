# The GGUF tests (README: "Formats"). make_gguf.py writes tiny random GGUF files of every
# architecture and tensor type headmap reads; headmap-cli opens them and is held to
#   gguf_matches_numpy       a float64 numpy forward of the dequantized weights (attention 1e-4, loss 1e-3);
#   gguf_matches_llama_cpp   llama.cpp itself (npm node-llama-cpp's prebuilt CPU build, installed
#                            into the build tree at test time by gguf_oracle_setup): token ids on
#                            hard strings, next-token top-1 and log-probabilities.
#   gguf_real_vocab_matches_llama_cpp  GGUF files carrying real vocabularies (Llama 3, Qwen 3,
#                            GPT-2, Phi-3's SentencePiece with and without the name by which
#                            llama.cpp strips the spaces after its chat tokens; make_gguf_vocab.py writes them once into the build tree from
#                            the hf_oracle fixture's tokenizer.json files): headmap-cli tokenize
#                            against llama.cpp's tokenizer, Hugging Face's as a second witness.
# Without node and npm, or when the registry cannot be reached, the llama.cpp test is skipped
# (exit 77) and says why; without python3-numpy both are.
set(HEADMAP_GGUF_ORACLE "${CMAKE_CURRENT_BINARY_DIR}/gguf-oracle")
add_test(NAME gguf_oracle_setup COMMAND sh "${CMAKE_CURRENT_SOURCE_DIR}/reference/install_npm_oracle.sh" llama.cpp
  "${HEADMAP_GGUF_ORACLE}" node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1)
set_tests_properties(gguf_oracle_setup PROPERTIES FIXTURES_SETUP gguf_oracle SKIP_RETURN_CODE 77 TIMEOUT 600)
find_program(HEADMAP_GGUF_PYTHON3 python3 HINTS /usr/bin)  # Debian's, which has python3-numpy
if(HEADMAP_GGUF_PYTHON3)
  add_test(NAME gguf_matches_numpy COMMAND ${HEADMAP_GGUF_PYTHON3} "${CMAKE_CURRENT_SOURCE_DIR}/reference/gguf_reference.py"
    $<TARGET_FILE:headmap-cli> "${CMAKE_CURRENT_BINARY_DIR}/gguf-reference")
  set_tests_properties(gguf_matches_numpy PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200)
  add_test(NAME gguf_matches_llama_cpp COMMAND ${HEADMAP_GGUF_PYTHON3} "${CMAKE_CURRENT_SOURCE_DIR}/reference/gguf_llama_check.py"
    $<TARGET_FILE:headmap-cli> "${HEADMAP_GGUF_ORACLE}/node_modules" "${CMAKE_CURRENT_BINARY_DIR}/gguf-llama")
  set_tests_properties(gguf_matches_llama_cpp PROPERTIES FIXTURES_REQUIRED gguf_oracle SKIP_RETURN_CODE 77 TIMEOUT 1800)
  add_test(NAME gguf_real_vocab_matches_llama_cpp COMMAND ${HEADMAP_GGUF_PYTHON3} "${CMAKE_CURRENT_SOURCE_DIR}/reference/gguf_real_vocab_check.py"
    $<TARGET_FILE:headmap-cli> "${HEADMAP_GGUF_ORACLE}/node_modules" "${HEADMAP_NPM_ORACLE}/node_modules" "${CMAKE_CURRENT_BINARY_DIR}/gguf-real-vocab")
  set_tests_properties(gguf_real_vocab_matches_llama_cpp PROPERTIES FIXTURES_REQUIRED "gguf_oracle;hf_oracle" SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
