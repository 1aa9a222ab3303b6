// libsoftrnic.so is softrnic_core linked whole; this file only gives the shared library a
// source of its own (CMake wants one), and the place to say so.
