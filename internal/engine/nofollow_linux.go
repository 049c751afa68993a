package engine

import "syscall"

const syscallNoFollow = syscall.O_NOFOLLOW
