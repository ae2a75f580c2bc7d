// The pause image of the node VM's pods (no registry is reachable): scripts/node-vm.sh builds it.
module github.com/local-volume-provisioner/node-vm/pause

go 1.26.0
