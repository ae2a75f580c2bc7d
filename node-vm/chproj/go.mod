// The tenant image's chproj (no tool of busybox sets a file's project): scripts/node-vm.sh builds it.
module github.com/local-volume-provisioner/node-vm/chproj

go 1.26.0
