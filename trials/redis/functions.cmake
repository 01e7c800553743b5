# Embeds trials/redis/hpo_functions.lua (the single source of the Redis
# Functions library) into a generated header as a raw string literal.
set(HPO_FUNCTIONS_LUA_FILE ${CMAKE_CURRENT_LIST_DIR}/hpo_functions.lua)
file(READ ${HPO_FUNCTIONS_LUA_FILE} HPO_FUNCTIONS_LUA)
if(HPO_FUNCTIONS_LUA MATCHES "\\)hpolua\"")
  message(FATAL_ERROR "hpo_functions.lua must not contain the raw-string delimiter )hpolua\"")
endif()
# A literal longer than 64 KB is beyond what compilers must support: the text
# is embedded in parts, cut at the marker lines (which the parts leave out).
string(REGEX REPLACE "-- @split@[^\n]*\n" ")hpolua\",\n    R\"hpolua(" HPO_FUNCTIONS_LUA
       "${HPO_FUNCTIONS_LUA}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/hpo_functions_lua.hpp.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/trials/redis/hpo_functions_lua.hpp @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${HPO_FUNCTIONS_LUA_FILE})
target_include_directories(hpo_trials PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
