package tools

import "os"

// dirFlags opens a directory to list it. Windows has no O_DIRECTORY: the
// listing of what is not a directory fails instead.
const dirFlags = os.O_RDONLY
