# Writes HEADER (optional: text, '|' separating its lines), then the files INPUTS
# ('|'-separated) one after another, into OUTPUT; used for the generated
# references (docs/CMakeLists.txt).
#   cmake -DOUTPUT=<file> -DINPUTS=<a|b|...> [-DHEADER=<text>] -P ConcatFiles.cmake
string(REPLACE "|" ";" INPUTS "${INPUTS}")
set(text "")
if(HEADER)
  string(REPLACE "|" "\n" HEADER "${HEADER}")
  set(text "${HEADER}\n\n")
endif()
foreach(input IN LISTS INPUTS)
  file(READ "${input}" part)
  string(APPEND text "${part}\n")
endforeach()
file(WRITE "${OUTPUT}" "${text}")
