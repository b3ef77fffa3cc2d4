// gl.h: the OpenGL 3.3 core entry points, straight from libGL (Linux exports them all), and
// a debug-only check that names the failing call.
#pragma once
#ifndef GL_GLEXT_PROTOTYPES  // app/CMakeLists.txt defines both for the app's every file
#define GL_GLEXT_PROTOTYPES 1
#endif
#ifndef GLFW_INCLUDE_NONE
#define GLFW_INCLUDE_NONE
#endif
#include <GL/glcorearb.h>

namespace headmap {
void gl_check(const char* what, const char* file, int line);
}  // namespace headmap

#ifndef NDEBUG
#define GL_CHECK(call)                                 \
  do {                                                 \
    call;                                              \
    ::headmap::gl_check(#call, __FILE__, __LINE__);    \
  } while (0)
#else
#define GL_CHECK(call) call
#endif
