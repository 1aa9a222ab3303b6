# Fills softrnic(7)'s %ENVIRONMENT% (not @...@, which configure_file would empty) from
# `softrnic info --env --json` (JSON_FILE): one Markdown definition per variable, name and
# default as the term, meaning as the text.
# Called by cmake/SoftrnicMan.cmake with -DJSON_FILE= -DIN= -DOUT=.
file(READ "${JSON_FILE}" json)
string(JSON n LENGTH "${json}" variables)
set(ENVIRONMENT "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" variables ${i} name)
  string(JSON default GET "${json}" variables ${i} default)
  string(JSON meaning GET "${json}" variables ${i} meaning)
  # Markdown would take these for emphasis or escapes.
  string(REPLACE "\\" "\\\\" meaning "${meaning}")
  string(REPLACE "*" "\\*" meaning "${meaning}")
  string(REPLACE "_" "\\_" meaning "${meaning}")
  string(APPEND ENVIRONMENT "**${name}** (default: ${default})\n:   ${meaning}\n\n")
endforeach()
file(READ "${IN}" text)
string(REPLACE "%ENVIRONMENT%" "${ENVIRONMENT}" text "${text}")
file(WRITE "${OUT}" "${text}")
