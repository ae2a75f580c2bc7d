"""The example app (app/main.ts) in Python, from the library's wheel and cdk8s from PyPI.

    pip install cdk8s cdk8s-plus-28 cdk8s_local_volume_provisioner-<version>-py3-none-any.whl
    python3 app.py [OUTDIR]        # writes OUTDIR/local-volume-provisioner.k8s.yaml (default dist/)
"""
import sys

from cdk8s import App, Chart, Duration
from cdk8s_local_volume_provisioner import LocalStorageClassProps, LocalVolumeProvisioner, ServiceMonitorOptions
from constructs import Construct


class ExampleChart(Chart):
    def __init__(self, scope: Construct, id: str):
        super().__init__(scope, id)
        LocalVolumeProvisioner(
            self,
            "provisioner",
            storage_classes=[LocalStorageClassProps(name="fast-disks", host_dir="/mnt/fast-disks")],
            service_monitor=ServiceMonitorOptions(interval=Duration.seconds(30)),
        )


app = App(outdir=sys.argv[1] if len(sys.argv) > 1 else "dist")
ExampleChart(app, "local-volume-provisioner")
app.synth()
