# Writes the text of IN into OUT as one C++ raw string literal, for
# #include where a string is expected (passes/codegen/cpu/CpuCodegen.cpp):
#   cmake -DIN=cpu-codegen.mlir -DOUT=cpu-codegen.mlir.inc -P embed.cmake
file(READ "${IN}" text)
set(delimiter "hkt_recipe")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the delimiter )${delimiter}\"")
endif()
file(WRITE "${OUT}" "R\"${delimiter}(${text})${delimiter}\"\n")
