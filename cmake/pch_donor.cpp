// The source the precompiled-header donors compile (cmake/precompiled_headers.cmake): empty,
// since what they are for is the header precompiled beside it.
