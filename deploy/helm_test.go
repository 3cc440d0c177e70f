package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gyrehq/gyre/server/config"
)

const chartDir = "helm/gyre"

// object holds the fields of the rendered Kubernetes objects the tests
// look at.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas int `yaml:"replicas"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    int   `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
	Containers                    []container `yaml:"containers"`
	Volumes                       []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
			Items      []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type container struct {
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port string `yaml:"port"`
	} `yaml:"tcpSocket"`
}

// helmBinary is the helm the tests render the chart with:
// RELEASE_CHECK_HELM, which scripts/release-check sets after building
// helm. (Not a GYRE_ name: the server reads those as config keys.)
func helmBinary(t *testing.T) string {
	t.Helper()
	h := os.Getenv("RELEASE_CHECK_HELM")
	if h == "" {
		t.Skip("RELEASE_CHECK_HELM is not set: scripts/release-check builds helm and renders the chart")
	}
	return h
}

// render runs helm template on the chart with the values file (none for
// the defaults) and the --set arguments.
func render(t *testing.T, helm, values string, set ...string) ([]object, error) {
	t.Helper()
	args := []string{"template", "t", chartDir}
	if values != "" {
		args = append(args, "-f", filepath.Join(chartDir, values))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(strings.TrimSpace(stderr.String()))
	}
	var objs []object
	dec := yaml.NewDecoder(&stdout)
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// valueSet is a set of chart values the tests render, and what the
// rendered objects must say.
type valueSet struct {
	name, file     string
	replicas       int
	existingSecret string
	redis          []string
	serviceMonitor bool
}

var valueSets = []valueSet{
	{name: "defaults", replicas: 1},
	{name: "redis", file: "ci/redis-values.yaml", replicas: 2, redis: []string{"redis://redis-master.data.svc:6379"}},
	{name: "existing secret", file: "ci/existing-secret-values.yaml", replicas: 1, existingSecret: "gyre-config",
		redis: []string{"redis://redis-a:6379", "redis://redis-b:6379"}},
	{name: "servicemonitor", file: "ci/servicemonitor-values.yaml", replicas: 1, serviceMonitor: true},
}

// TestHelmValueSetsListed: every values file under ci/ (which
// release-check lints) is rendered by TestHelmChart.
func TestHelmValueSetsListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files under %s/ci: %v", chartDir, err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(chartDir, f)
		if !slices.ContainsFunc(valueSets, func(v valueSet) bool { return v.file == rel }) {
			t.Errorf("%s is not among the value sets TestHelmChart renders", rel)
		}
	}
}

func TestHelmChart(t *testing.T) {
	helm := helmBinary(t)
	bin := buildGyre(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs, err := render(t, helm, vs.file)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			deps := ofKind(objs, "Deployment")
			if len(deps) != 1 {
				t.Fatalf("%d Deployments, want 1", len(deps))
			}
			if deps[0].Spec.Replicas != vs.replicas {
				t.Errorf("replicas %d, want %d", deps[0].Spec.Replicas, vs.replicas)
			}
			pod := deps[0].Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			cfg := serverConfig(t, bin, objs, pod, c, vs)
			checkProbes(t, c, cfg)
			checkGracePeriod(t, pod, c, cfg)
			checkSecurity(t, pod, c)
			checkService(t, objs, c, cfg)
			checkServiceMonitor(t, objs, cfg, vs.serviceMonitor)
			if vs.redis == nil {
				if cfg.Engine.Type != "memory" {
					t.Errorf("engine.type %q, want memory", cfg.Engine.Type)
				}
			} else if cfg.Engine.Type != "redis" || !slices.Equal(cfg.Engine.Redis.Address, vs.redis) {
				t.Errorf("engine %q at %q, want redis at %q", cfg.Engine.Type, cfg.Engine.Redis.Address, vs.redis)
			}
		})
	}
}

// serverConfig is the config the server in the pod would run with: the
// rendered ConfigMap (or, for an existing Secret, an empty file standing
// in for it), the container's environment (secrets replaced by a
// placeholder) and the flags of its args. Where the chart renders the
// file, gyre checkconfig must accept it as is.
func serverConfig(t *testing.T, bin string, objs []object, pod podSpec, c container, vs valueSet) *config.Config {
	t.Helper()
	path, flags := configArgs(t, c.Args)
	mount := ""
	for _, m := range c.VolumeMounts {
		if m.Name == "config" {
			mount = m.MountPath
		}
	}
	if mount == "" || filepath.Join(mount, "config.json") != path {
		t.Fatalf("-c %s, but the config volume is mounted at %q", path, mount)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Name != "config" {
		t.Fatalf("volumes %+v, want one named config", pod.Volumes)
	}
	vol := pod.Volumes[0]
	cms := ofKind(objs, "ConfigMap")
	content := "{}"
	if vs.existingSecret != "" {
		if len(cms) != 0 || vol.Secret == nil || vol.Secret.SecretName != vs.existingSecret ||
			len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Path != "config.json" {
			t.Fatalf("config volume %+v and %d ConfigMaps, want Secret %s as config.json alone", vol, len(cms), vs.existingSecret)
		}
	} else {
		if len(cms) != 1 || vol.ConfigMap == nil || vol.ConfigMap.Name != cms[0].Metadata.Name {
			t.Fatalf("config volume %+v, ConfigMaps %d: want the chart's ConfigMap", vol, len(cms))
		}
		if len(flags) != 0 {
			t.Errorf("flags %v over the chart's own config", flags)
		}
		content = cms[0].Data["config.json"]
	}
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var environ []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			v = "from-secret"
		}
		environ = append(environ, e.Name+"="+v)
	}
	if vs.existingSecret == "" {
		check := exec.Command(bin, "checkconfig", "-c", file)
		check.Env = append([]string{}, environ...) // only the pod's
		if out, err := check.CombinedOutput(); err != nil || strings.Contains(string(out), "warning") {
			t.Fatalf("gyre checkconfig on the ConfigMap's config.json: %v\n%s\n%s", err, out, content)
		}
	}
	cfg, warnings, err := config.Resolve(config.Sources{File: file, Environ: environ, EnvPrefixes: []string{config.DefaultEnvPrefix}, Flags: flags})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("the pod's config: %v %q", err, warnings)
	}
	return cfg
}

// configArgs reads the container's args as the server does: -c FILE and
// --key.path=VALUE flags.
func configArgs(t *testing.T, args []string) (path string, flags map[string]string) {
	t.Helper()
	if len(args) < 2 || args[0] != "-c" {
		t.Fatalf("args %q: want -c FILE first", args)
	}
	flags = map[string]string{}
	for _, a := range args[2:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			t.Fatalf("arg %q is no --key=value flag", a)
		}
		flags[k] = v
	}
	return args[1], flags
}

// containerPort is the number of the container's port of that name.
func containerPort(c container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// internalPort is the port that serves health, metrics and the API.
func internalPort(cfg *config.Config) int {
	if cfg.HTTPServer.InternalPort != 0 {
		return cfg.HTTPServer.InternalPort
	}
	return cfg.HTTPServer.Port
}

func checkProbes(t *testing.T, c container, cfg *config.Config) {
	t.Helper()
	if !cfg.Health.Enabled {
		t.Fatal("health.enabled is off in the pod's config: the probes would get 404")
	}
	// Readiness follows /health, which fails while the broker is
	// unreachable; liveness must not, or a Redis outage restarts every pod.
	r := c.ReadinessProbe
	if r == nil || r.HTTPGet == nil {
		t.Fatal("no HTTP readiness probe")
	}
	if r.HTTPGet.Path != "/health" || r.HTTPGet.Path != cfg.Health.HandlerPrefix {
		t.Errorf("readiness probe path %q, health endpoint at %q, want /health", r.HTTPGet.Path, cfg.Health.HandlerPrefix)
	}
	if got, want := containerPort(c, r.HTTPGet.Port), internalPort(cfg); got != want {
		t.Errorf("readiness probe on port %q (%d), health served on %d", r.HTTPGet.Port, got, want)
	}
	l := c.LivenessProbe
	if l == nil || l.TCPSocket == nil || l.HTTPGet != nil {
		t.Fatal("the liveness probe is not a TCP probe: one on /health would restart every pod while Redis is down")
	}
	if got, want := containerPort(c, l.TCPSocket.Port), internalPort(cfg); got != want {
		t.Errorf("liveness probe on port %q (%d), the internal port is %d", l.TCPSocket.Port, got, want)
	}
}

// checkGracePeriod: Kubernetes kills the container terminationGracePeriodSeconds
// after it starts stopping it, preStop sleep included: the server's own
// shutdown timeout must fit in what remains.
func checkGracePeriod(t *testing.T, pod podSpec, c container, cfg *config.Config) {
	t.Helper()
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if grace <= preStop+cfg.Shutdown.Timeout {
		t.Errorf("terminationGracePeriodSeconds %v, not above the preStop sleep %v + shutdown.timeout %v", grace, preStop, cfg.Shutdown.Timeout)
	}
}

func checkSecurity(t *testing.T, pod podSpec, c container) {
	t.Helper()
	sc := c.SecurityContext
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-root runAsUser", pod.SecurityContext)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("container securityContext: readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container securityContext: allowPrivilegeEscalation is not false")
	}
	if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container capabilities drop %q, want ALL", sc.Capabilities.Drop)
	}
}

// checkService: the Service's ports lead to the container's, the client
// port to http_server.port.
func checkService(t *testing.T, objs []object, c container, cfg *config.Config) {
	t.Helper()
	svcs := ofKind(objs, "Service")
	if len(svcs) != 1 {
		t.Fatalf("%d Services, want 1", len(svcs))
	}
	for _, p := range svcs[0].Spec.Ports {
		n := containerPort(c, p.TargetPort)
		if n == 0 {
			t.Errorf("Service port %s targets %q, which the container lacks", p.Name, p.TargetPort)
		}
		if p.Name == "http" && n != cfg.HTTPServer.Port {
			t.Errorf("Service port http leads to %d, clients are served on %d", n, cfg.HTTPServer.Port)
		}
	}
}

func checkServiceMonitor(t *testing.T, objs []object, cfg *config.Config, want bool) {
	t.Helper()
	sms := ofKind(objs, "ServiceMonitor")
	if !want {
		if len(sms) != 0 {
			t.Errorf("%d ServiceMonitors, want none", len(sms))
		}
		return
	}
	if len(sms) != 1 || len(sms[0].Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitors %+v, want one with one endpoint", sms)
	}
	if !cfg.Prometheus.Enabled {
		t.Error("a ServiceMonitor, but prometheus.enabled is off")
	}
	ep := sms[0].Spec.Endpoints[0]
	if ep.Path != cfg.Prometheus.HandlerPrefix {
		t.Errorf("ServiceMonitor path %q, metrics at %q", ep.Path, cfg.Prometheus.HandlerPrefix)
	}
	svc := ofKind(objs, "Service")[0]
	dep := ofKind(objs, "Deployment")[0]
	for _, p := range svc.Spec.Ports {
		if p.Name == ep.Port {
			if n := containerPort(dep.Spec.Template.Spec.Containers[0], p.TargetPort); n != internalPort(cfg) {
				t.Errorf("ServiceMonitor scrapes port %d, metrics are served on %d", n, internalPort(cfg))
			}
			return
		}
	}
	t.Errorf("ServiceMonitor port %q is no port of the Service", ep.Port)
}

// TestHelmChartRefuses: values that would deploy something broken fail
// the render with a message instead.
func TestHelmChartRefuses(t *testing.T) {
	helm := helmBinary(t)
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"replicas on the memory engine", []string{"replicaCount=2"}, "needs engine.type redis"},
		{"redis without an address", []string{"engine.type=redis"}, "set engine.redis.address"},
		{"unknown engine", []string{"engine.type=nats"}, `engine.type "nats"`},
		{"ServiceMonitor without metrics", []string{"metrics.enabled=false", "metrics.serviceMonitor.enabled=true"}, "needs metrics.enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, helm, "", tt.set...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("helm template: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
