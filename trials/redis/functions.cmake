# Embeds the Redis Functions library (trials/redis/functions/*.lua, one concern
# per file, joined in the order of their numbers: the single source) into a
# generated header as raw string literals, one per file (a literal longer than
# 64 KB is beyond what compilers must support; each file stays well under).
file(GLOB HPO_FUNCTIONS_LUA_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/functions/*.lua)
list(SORT HPO_FUNCTIONS_LUA_FILES)
set(HPO_FUNCTIONS_LUA "")
set(HPO_FUNCTIONS_SEPARATOR "")
foreach(lua_file IN LISTS HPO_FUNCTIONS_LUA_FILES)
  file(READ ${lua_file} lua_text)
  get_filename_component(lua_name ${lua_file} NAME)
  if(lua_text MATCHES "\\)hpolua\"")
    message(FATAL_ERROR "${lua_name} must not contain the raw-string delimiter )hpolua\"")
  endif()
  string(LENGTH "${lua_text}" lua_length)
  if(lua_length GREATER 60000)
    message(FATAL_ERROR "${lua_name} is ${lua_length} bytes: split it (C++ string literals stay under 64 KB)")
  endif()
  string(APPEND HPO_FUNCTIONS_LUA "${HPO_FUNCTIONS_SEPARATOR}${lua_text}")
  set(HPO_FUNCTIONS_SEPARATOR ")hpolua\",\n    R\"hpolua(")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${lua_file})
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/hpo_functions_lua.hpp.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/trials/redis/hpo_functions_lua.hpp @ONLY)
target_include_directories(hpo_store_redis PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
