# Man pages, written in Markdown (docs/man/*.md) and turned into roff by pandoc at build
# time, as rdma-core does: softrnic(1) and one page per subcommand, softrnic-dat.conf(5),
# softrnic(7). softrnic(7)'s ENVIRONMENT section is made from `softrnic info --env --json`,
# the declared configuration table, so it lists exactly the variables the library reads.
#
# SOFTRNIC_MAN_PAGES: AUTO (default: when pandoc is found), ON (pandoc required), OFF.
set(SOFTRNIC_MAN_PAGES AUTO CACHE STRING "Build the man pages with pandoc: AUTO, ON or OFF")
set_property(CACHE SOFTRNIC_MAN_PAGES PROPERTY STRINGS AUTO ON OFF)

find_program(SOFTRNIC_PANDOC pandoc)
if(SOFTRNIC_MAN_PAGES STREQUAL "OFF" OR
   (SOFTRNIC_MAN_PAGES STREQUAL "AUTO" AND NOT SOFTRNIC_PANDOC))
  set(SOFTRNIC_MAN_BUILT OFF)
  return()
endif()
if(NOT SOFTRNIC_PANDOC)
  message(FATAL_ERROR "SOFTRNIC_MAN_PAGES=ON needs pandoc (apt-get install pandoc)")
endif()
set(SOFTRNIC_MAN_BUILT ON)

set(_man_src ${PROJECT_SOURCE_DIR}/docs/man)
set(_man_out ${PROJECT_BINARY_DIR}/man)
set(_man_pages softrnic.1 softrnic-bench.1 softrnic-info.1 softrnic-stats.1 softrnic-doctor.1
               softrnic-dat-conf.1 softrnic-dat.conf.5)
set(SOFTRNIC_MAN_FILES)

foreach(_page ${_man_pages})
  configure_file(${_man_src}/${_page}.md ${_man_out}/${_page}.md @ONLY)
  add_custom_command(OUTPUT ${_man_out}/${_page}
    COMMAND ${SOFTRNIC_PANDOC} --standalone --from markdown --to man
            --output ${_man_out}/${_page} ${_man_out}/${_page}.md
    DEPENDS ${_man_src}/${_page}.md
    COMMENT "Man page ${_page}")
  list(APPEND SOFTRNIC_MAN_FILES ${_man_out}/${_page})
endforeach()

configure_file(${_man_src}/softrnic.7.md.in ${_man_out}/softrnic.7.md.in @ONLY)
add_custom_command(OUTPUT ${_man_out}/softrnic.7
  COMMAND softrnic_cli info --env --json > ${_man_out}/environment.json
  COMMAND ${CMAKE_COMMAND} -DJSON_FILE=${_man_out}/environment.json
          -DIN=${_man_out}/softrnic.7.md.in -DOUT=${_man_out}/softrnic.7.md
          -P ${CMAKE_CURRENT_LIST_DIR}/man_environment.cmake
  COMMAND ${SOFTRNIC_PANDOC} --standalone --from markdown --to man
          --output ${_man_out}/softrnic.7 ${_man_out}/softrnic.7.md
  DEPENDS ${_man_src}/softrnic.7.md.in ${CMAKE_CURRENT_LIST_DIR}/man_environment.cmake
          softrnic_cli
  COMMENT "Man page softrnic.7")
list(APPEND SOFTRNIC_MAN_FILES ${_man_out}/softrnic.7)

add_custom_target(man_pages ALL DEPENDS ${SOFTRNIC_MAN_FILES})

foreach(_file ${SOFTRNIC_MAN_FILES})
  string(REGEX MATCH "[0-9]$" _section ${_file})
  install(FILES ${_file} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
          COMPONENT runtime)
endforeach()
