package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/txengine/txengine/internal/proc"
)

// local is the throwaway cluster of this test binary. It is the package's
// only mutable state, and it cannot be avoided: the cluster is shared by all
// the tests of the process (one cluster per test would cost a second each)
// and must outlive them, until RunMain stops it. once starts it at most once;
// the other fields are written inside once.Do only, and read after it.
var local struct {
	once    sync.Once
	cluster *cluster
	err     error
}

// localURL starts the local cluster on first use and returns its
// administrative URL.
func localURL() (string, error) {
	local.once.Do(func() { local.cluster, local.err = startCluster() })
	if local.err != nil {
		return "", local.err
	}
	return local.cluster.url, nil
}

// stopLocal stops the local cluster if it was started. Called after the
// tests are done.
func stopLocal() error {
	// A no-op Do orders this read after the Do that started the cluster
	// (and prevents a start from now on).
	local.once.Do(func() {})
	if local.cluster == nil {
		return nil
	}
	return local.cluster.stop()
}

// cluster is a running throwaway PostgreSQL cluster.
type cluster struct {
	// dir holds data/, the socket and postgres.log; removed by stop.
	dir string
	// url is the administrative URL (database postgres, superuser postgres)
	// on port.
	url  string
	port int
	// proc is the postmaster.
	proc *proc.Process
}

// Settings of the throwaway cluster.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
	superuser    = "postgres"
)

// serverSettings trade durability for speed: a crash of the cluster loses
// nothing worth keeping.
var serverSettings = append([]string{
	"fsync=off",
	"synchronous_commit=off",
	"full_page_writes=off",
}, durableSettings...)

// durableSettings keep PostgreSQL's durability defaults (fsync, synchronous
// commit, full page writes): a commit is on disk when it returns. For
// benchmarks that claim durable writes (StartDurableCluster).
var durableSettings = []string{
	"listen_addresses=127.0.0.1",
	"max_connections=200",
	"shared_buffers=64MB",
	"max_wal_size=1GB",
	"log_min_messages=warning",
}

// binaries locates initdb and postgres: under /usr/lib/postgresql/<v>/bin
// (Debian, Ubuntu) or /usr/pgsql-<v>/bin (RHEL), the highest version first,
// else on PATH.
func binaries() (initdb, postgres string, err error) {
	type candidate struct {
		version float64
		dir     string
	}
	var cands []candidate
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			v := filepath.Base(filepath.Dir(d))
			v = strings.TrimPrefix(v, "pgsql-")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			cands = append(cands, candidate{f, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].version > cands[j].version })
	for _, c := range cands {
		i, p := filepath.Join(c.dir, "initdb"), filepath.Join(c.dir, "postgres")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	i, err := exec.LookPath("initdb")
	if err != nil {
		return "", "", &unavailableError{"no initdb under /usr/lib/postgresql/*/bin, /usr/pgsql-*/bin or on PATH"}
	}
	// postgres next to initdb (symbolic links resolved), else on PATH.
	if real, err := filepath.EvalSymlinks(i); err == nil {
		if p := filepath.Join(filepath.Dir(real), "postgres"); isExecutable(p) {
			return i, p, nil
		}
	}
	p, err := exec.LookPath("postgres")
	if err != nil {
		return "", "", &unavailableError{"initdb found at " + i + " but no postgres server binary"}
	}
	return i, p, nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// runAs is the user PostgreSQL runs as: nil for the current user, else the
// unprivileged user to switch to because we are root.
type runAs struct {
	name     string
	uid, gid uint32
}

// serverUser returns nil when not running as root, else the first of the
// users postgres and nobody that exists.
func serverUser() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &runAs{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither user postgres nor user nobody exists to run PostgreSQL as")
}

// reachable checks that every parent of dir lets others search it, so that
// the unprivileged user can reach dir.
func reachable(dir string, as *runAs) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("PostgreSQL runs as user %s, which cannot reach %s (%s is mode %v): set TMPDIR to a directory under a world-searchable path such as /tmp",
				as.name, dir, d, st.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// startCluster initialises and starts a cluster in a new temporary
// directory.
func startCluster() (*cluster, error) {
	dir, data, as, postgres, err := initCluster()
	if err != nil {
		return nil, err
	}
	c, err := startFreePort(dir, data, as, postgres, serverSettings)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// startFreePort starts the server of an initialised cluster on a free port.
func startFreePort(dir, data string, as *runAs, postgres string, settings []string) (c *cluster, err error) {
	// A port found free may be taken before postgres binds it: try again.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		c, err = startServer(dir, data, as, postgres, port, settings)
		if err == nil || attempt == 3 || !errors.Is(err, errPortTaken) {
			return c, err
		}
	}
}

// initCluster runs initdb in a new temporary directory (removed again on
// error) and returns the directory, the data directory, the user to run
// the server as and the server binary.
func initCluster() (dir, data string, as *runAs, postgres string, err error) {
	initdb, postgres, err := binaries()
	if err != nil {
		return "", "", nil, "", err
	}
	as, err = serverUser()
	if err != nil {
		return "", "", nil, "", err
	}
	dir, err = os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", "", nil, "", fmt.Errorf("create the cluster directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if as != nil {
		if err := reachable(dir, as); err != nil {
			return "", "", nil, "", err
		}
		if err := os.Chown(dir, int(as.uid), int(as.gid)); err != nil {
			return "", "", nil, "", fmt.Errorf("hand %s to user %s: %w", dir, as.name, err)
		}
	}
	data = filepath.Join(dir, "data")
	out, err := command(dir, as, initdb, "-D", data, "-U", superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return "", "", nil, "", fmt.Errorf("%s: %w\n%s", initdb, err, out)
	}
	return dir, data, as, postgres, nil
}

// errPortTaken says that postgres could not bind its port.
var errPortTaken = errors.New("port taken")

// startServer starts postgres on port of the loopback interface and waits
// until it accepts connections. A port that another process took between
// the probe and the listen is errPortTaken.
func startServer(dir, data string, as *runAs, postgres string, port int, settings []string) (*cluster, error) {
	logPath := filepath.Join(dir, "postgres.log")
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-k", dir}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	c := &cluster{
		dir:  dir,
		port: port,
		url:  fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, port),
	}
	db, err := sql.Open("postgres", c.url)
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	defer db.Close()
	c.proc = proc.New(proc.Spec{
		Name:    "postgres",
		Command: func() *exec.Cmd { return command(dir, as, postgres, args...) },
		LogPath: logPath,
		Ready: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return db.PingContext(ctx)
		},
		ReadyTimeout: startTimeout,
		// Fast shutdown: sessions are disconnected.
		StopSignal:  syscall.SIGINT,
		StopTimeout: stopTimeout,
	})
	if err := c.proc.Start(); err != nil {
		log, _ := os.ReadFile(logPath)
		if errors.Is(err, proc.ErrExited) && (strings.Contains(string(log), "could not bind") || strings.Contains(string(log), "Address already in use")) {
			return nil, fmt.Errorf("postgres exited: %w\n%s", errPortTaken, log)
		}
		return nil, fmt.Errorf("%w:\n%s", err, log)
	}
	return c, nil
}

// stop shuts the cluster down (fast shutdown: sessions are disconnected)
// and removes its directory.
func (c *cluster) stop() error {
	errs := []error{c.shutdown()}
	if err := os.RemoveAll(c.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", c.dir, err))
	}
	return errors.Join(errs...)
}

// shutdown stops the server (fast shutdown) and waits for it, keeping its
// directory; past stopTimeout it is killed.
func (c *cluster) shutdown() error { return c.proc.Stop() }

// command prepares name with args, run in dir as the user as (nil: the
// current user), with an environment free of PG* variables that would
// redirect the server or the tools.
func command(dir string, as *runAs, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	env := []string{"LC_ALL=C"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr(as)
	return cmd
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
