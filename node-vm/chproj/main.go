// Command chproj sets the project ID of files and directories, as any owner of them may
// from the host's user namespace (FS_IOC_FSSETXATTR): what a tenant's own chattr -p does.
// The node VM's tenant image carries it, so that a default pod can try to leave its
// volume's project quota.
//
//	chproj ID PATH...          the project of each PATH becomes ID
//	chproj -noinherit ID DIR...  also takes the inherit flag off each directory
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// fsxattr is the kernel's struct fsxattr (linux/fs.h).
type fsxattr struct {
	xflags     uint32
	extsize    uint32
	nextents   uint32
	projid     uint32
	cowextsize uint32
	pad        [8]byte
}

const (
	fsIocFsgetxattr    = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIocFssetxattr    = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsXflagProjinherit = 0x200
)

func main() {
	args := os.Args[1:]
	noInherit := len(args) > 0 && args[0] == "-noinherit"
	if noInherit {
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chproj [-noinherit] ID PATH...")
		os.Exit(2)
	}
	id, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chproj: %q is not a project ID\n", args[0])
		os.Exit(2)
	}
	failed := false
	for _, path := range args[1:] {
		if err := setProject(path, uint32(id), noInherit); err != nil {
			fmt.Fprintf(os.Stderr, "chproj: %s: %v\n", path, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func setProject(path string, id uint32, noInherit bool) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var attr fsxattr
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), fsIocFsgetxattr, uintptr(unsafe.Pointer(&attr))); errno != 0 {
		return errno
	}
	attr.projid = id
	if noInherit {
		attr.xflags &^= fsXflagProjinherit
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), fsIocFssetxattr, uintptr(unsafe.Pointer(&attr))); errno != 0 {
		return errno
	}
	return nil
}
