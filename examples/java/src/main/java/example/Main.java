package example;

import io.github.localvolumeprovisioner.cdk8s.LocalStorageClassProps;
import io.github.localvolumeprovisioner.cdk8s.LocalVolumeProvisioner;
import io.github.localvolumeprovisioner.cdk8s.LocalVolumeProvisionerProps;
import io.github.localvolumeprovisioner.cdk8s.ServiceMonitorOptions;
import java.util.List;
import org.cdk8s.App;
import org.cdk8s.AppProps;
import org.cdk8s.Chart;
import org.cdk8s.Duration;
import software.constructs.Construct;

/** The example app (app/main.ts) in Java: writes OUTDIR/local-volume-provisioner.k8s.yaml (default dist/). */
public final class Main {
  static final class ExampleChart extends Chart {
    ExampleChart(final Construct scope, final String id) {
      super(scope, id);
      new LocalVolumeProvisioner(this, "provisioner", LocalVolumeProvisionerProps.builder()
          .storageClasses(List.of(LocalStorageClassProps.builder().name("fast-disks").hostDir("/mnt/fast-disks").build()))
          .serviceMonitor(ServiceMonitorOptions.builder().interval(Duration.seconds(30)).build())
          .build());
    }
  }

  public static void main(final String[] args) {
    final App app = new App(AppProps.builder().outdir(args.length > 0 ? args[0] : "dist").build());
    new ExampleChart(app, "local-volume-provisioner");
    app.synth();
  }
}
