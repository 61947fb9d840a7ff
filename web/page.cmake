# The viewer page's two build steps (web/CMakeLists.txt runs them): STEP=npm runs `npm ci`
# in WORK (the copy of web/), STEP=vite runs `vite build` into OUT. Where npm cannot fetch
# the packages (an offline machine, a proxy npm does not trust) the build goes on without
# the page: the npm step says so and writes why to MISSING, the vite step then leaves no
# page in OUT (the daemon's / says how to get it) and tests/python/test_viewer.py reads
# MISSING to say why it skips. npm is not asked again (its timeouts are long) until the
# lockfile changes or MISSING is removed.
cmake_minimum_required(VERSION 3.16)

function(npm_ci)
  execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                  WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(rc EQUAL 0)
    file(REMOVE ${MISSING})
    return()
  endif()
  # npm's error code (ECONNREFUSED, ENOTFOUND, SELF_SIGNED_CERT_IN_CHAIN ...) names the cause
  string(REGEX MATCH "npm (ERR!|error) code [^\n]*" cause "${out}")
  if(NOT cause)
    string(REGEX MATCH "[^\n]+" cause "${out}")
  endif()
  if(NOT cause)
    set(cause "exit status ${rc}")
  endif()
  execute_process(COMMAND ${NPM} config get registry OUTPUT_VARIABLE registry
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(why "npm could not fetch the page's packages from ${registry} (${cause})")
  file(WRITE ${MISSING} "${why}\n")
  message("viewer page: ${why}: h5arkd is built without the page (its / says how to get "
          "it). Make the registry reachable (npm config: registry, proxy, cafile), remove "
          "${MISSING} and build again to add the page.")
endfunction()

if(STEP STREQUAL "npm")
  npm_ci()
  file(TOUCH ${WORK}/npm-ci.stamp)
  return()
endif()

# STEP vite: npm ci again when MISSING was removed to try again
if(NOT EXISTS ${MISSING} AND NOT EXISTS ${WORK}/node_modules/.package-lock.json)
  npm_ci()
endif()
if(EXISTS ${MISSING})
  file(STRINGS ${MISSING} why LIMIT_COUNT 1)
  message("viewer page: skipped: ${why} (remove ${MISSING} to try again)")
  file(REMOVE_RECURSE ${OUT})
  return()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env H5ARK_WEB_OUT=${OUT}
                        ${WORK}/node_modules/.bin/vite build --logLevel warn
                WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "viewer page: vite build failed (exit status ${rc})")
endif()
