# Removes from DIR every file nvcc's -keep left there except the PTX (CMakeLists.txt, the
# test DeviceCode.NoRecursion).
file(GLOB kept "${DIR}/*")
foreach(f IN LISTS kept)
  if(NOT f MATCHES "\\.ptx$" AND NOT IS_DIRECTORY "${f}")
    file(REMOVE "${f}")
  endif()
endforeach()
