# What `cmake --install` puts in place, in the GNUInstallDirs layout:
#   runtime      libsoftrnic.so.0, libitapi.so.2, libdat2.so.2 and the uDAPL provider
#                libdaplsoftrnic.so.2 (each real file and its soname link), the provider's
#                dat.conf lines, the `softrnic` command and its man pages;
#   development  the public headers (include/: rnicpi/, softrnic/, dat2/, it_api.h), the
#                link-time names libsoftrnic.so, libitapi.so and libdat2.so, one pkg-config
#                file per public library and the CMake package (find_package(softrnic):
#                softrnic::rnicpi, softrnic::itapi, softrnic::dat2).
# SOFTRNIC_INSTALL_DAT_REGISTRY=OFF leaves out libdat2, its headers, pkg-config file and
# target, for a system whose own registry the provider runs under (debian/rules).
# Every installed file that names a path is relative to where it is installed, or written
# at install time, so `cmake --install --prefix P` and DESTDIR staging give working files.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_softrnic_public_libraries softrnic itapi)
set(_softrnic_pkgconfig softrnic-rnicpi softrnic-itapi)
set(_softrnic_header_excludes)
if(SOFTRNIC_INSTALL_DAT_REGISTRY)
  list(APPEND _softrnic_public_libraries dat2)
  list(APPEND _softrnic_pkgconfig softrnic-dat2)
else()
  set(_softrnic_header_excludes PATTERN "dat2" EXCLUDE)
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development FILES_MATCHING PATTERN "*.h" ${_softrnic_header_excludes})

# The public libraries, under the names find_package(softrnic) gives them (and the same
# names in this tree, for a project that adds softrnic as a subdirectory).
set_target_properties(softrnic PROPERTIES EXPORT_NAME rnicpi)
add_library(softrnic::rnicpi ALIAS softrnic)
add_library(softrnic::dat2 ALIAS dat2)
set_target_properties(itapi PROPERTIES EXPORT_NAME itapi)
add_library(softrnic::itapi ALIAS itapi)
install(TARGETS ${_softrnic_public_libraries} EXPORT softrnicTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The provider is loaded by its soname path from a dat.conf line, never linked: no
# link-time name (its registry calls resolve only inside the libdat2 that loads it).
install(TARGETS daplsoftrnic LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
        NAMELINK_SKIP)

# The command finds libsoftrnic relative to itself, so an install under any prefix runs
# without LD_LIBRARY_PATH or ldconfig (the provider does the same with $ORIGIN).
if(IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_softrnic_cli_rpath "${CMAKE_INSTALL_FULL_LIBDIR}")
else()
  file(RELATIVE_PATH _bin_to_lib /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${CMAKE_INSTALL_LIBDIR})
  set(_softrnic_cli_rpath "$ORIGIN/${_bin_to_lib}")
endif()
set_target_properties(softrnic_cli PROPERTIES INSTALL_RPATH "${_softrnic_cli_rpath}")
install(TARGETS softrnic_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# Installs TEMPLATE as DESTINATION/NAME, configured (@ONLY) when it is installed: the
# prefix is known only then (`cmake --install --prefix`). The template sees prefix,
# libdir and includedir (each "${prefix}/..." unless the install dir is absolute, for
# pkg-config), PROJECT_VERSION and DAPL_LIB (the provider's installed soname path).
function(softrnic_install_configured template destination name component)
  set(output ${PROJECT_BINARY_DIR}/install-time/${name})
  file(CONFIGURE OUTPUT ${output}.cmake @ONLY CONTENT [==[
# Written by cmake/SoftrnicInstall.cmake: configures @template@ for the install prefix.
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(PROJECT_VERSION "@PROJECT_VERSION@")
function(softrnic_install_dir var path)
  if(IS_ABSOLUTE "${path}")
    set(${var} "${path}" PARENT_SCOPE)
    set(${var}_full "${path}" PARENT_SCOPE)
  else()
    set(${var} "\${prefix}/${path}" PARENT_SCOPE)
    set(${var}_full "${prefix}/${path}" PARENT_SCOPE)
  endif()
endfunction()
softrnic_install_dir(libdir "@CMAKE_INSTALL_LIBDIR@")
softrnic_install_dir(includedir "@CMAKE_INSTALL_INCLUDEDIR@")
softrnic_install_dir(destination "@destination@")
set(DAPL_LIB "${libdir_full}/libdaplsoftrnic.so.2")
configure_file("@template@" "@output@" @ONLY)
file(INSTALL DESTINATION "${destination_full}" TYPE FILE FILES "@output@")
]==])
  install(SCRIPT ${output}.cmake COMPONENT ${component})
endfunction()

# The provider's dat.conf lines, as a file to point DAT_OVERRIDE at or to append to
# /etc/dat.conf. Read-only data rather than configuration: no libdat2 (Debian's or
# softrnic's) reads a dat.conf.d directory or <prefix>/etc, only /etc/dat.conf and
# DAT_OVERRIDE, so a file under etc/ would look active without being so.
set(SOFTRNIC_DAT_CONF_DIR ${CMAKE_INSTALL_DATADIR}/softrnic)
softrnic_install_configured(${PROJECT_SOURCE_DIR}/src/api/dat/provider/dat.conf.in
                            ${SOFTRNIC_DAT_CONF_DIR} dat.conf runtime)

# pkg-config: softrnic-rnicpi (libsoftrnic: <rnicpi/rnicpi.h>, <softrnic/softrnic.h>) and
# softrnic-dat2 (libdat2: <dat2/udat.h>).
foreach(_pc ${_softrnic_pkgconfig})
  softrnic_install_configured(${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in
                              ${CMAKE_INSTALL_LIBDIR}/pkgconfig ${_pc}.pc development)
endforeach()

# The CMake package. 0.x releases may change the interface from one minor version to the
# next: a request for 0.1 is met by 0.1.y only.
set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/softrnic)
install(EXPORT softrnicTargets NAMESPACE softrnic:: DESTINATION ${_cmake_dir}
        COMPONENT development)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/softrnicConfig.cmake.in
  ${PROJECT_BINARY_DIR}/softrnicConfig.cmake INSTALL_DESTINATION ${_cmake_dir}
  PATH_VARS SOFTRNIC_DAT_CONF_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/softrnicConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/softrnicConfig.cmake
              ${PROJECT_BINARY_DIR}/softrnicConfigVersion.cmake
        DESTINATION ${_cmake_dir} COMPONENT development)
