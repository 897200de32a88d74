# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

# Finds hiredis for asio_sync::redis, both when asio_sync is built and in its installed package.
# Sets <result_var> to the target to link (empty when hiredis is not found): hiredis's own
# hiredis::hiredis where its CMake package defines it (hiredis 1.x), or else an imported target made
# from pkg-config's hiredis module (hiredis 0.14, Debian bookworm's, whose CMake package sets
# variables only).
function(asio_sync_find_hiredis result_var)
    find_package(hiredis CONFIG QUIET)
    if(TARGET hiredis::hiredis)
        set(${result_var} hiredis::hiredis PARENT_SCOPE)
        return()
    endif()
    set(${result_var} "" PARENT_SCOPE)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
        pkg_check_modules(asio_sync_hiredis QUIET IMPORTED_TARGET hiredis)
        if(asio_sync_hiredis_FOUND)
            set(${result_var} PkgConfig::asio_sync_hiredis PARENT_SCOPE)
        endif()
    endif()
endfunction()

set(ASIO_SYNC_HIREDIS_MISSING
    "asio_sync::redis needs hiredis, found neither as a CMake package (hiredis::hiredis) nor through pkg-config (hiredis.pc); on Debian: apt install libhiredis-dev pkg-config")
