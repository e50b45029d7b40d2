# The library every measurement tool links: gpusort's base layer plus the tools' shared pieces.
# Included by each tool's CMakeLists.txt; defines the target once.
if(NOT TARGET gpusort_tools_common)
  add_library(gpusort_tools_common STATIC ${PROJECT_SOURCE_DIR}/tools/common/tool_support.cpp)
  target_include_directories(gpusort_tools_common PUBLIC ${PROJECT_SOURCE_DIR}/tools)
  target_link_libraries(gpusort_tools_common
    PUBLIC gpusort_base Boost::program_options PRIVATE gpusort_warnings)
endif()
