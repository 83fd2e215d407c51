// This file holds a throwaway PostgreSQL cluster for tests: initdb into a
// temporary directory, postgres on a free loopback port, removed at the end.

package binaries

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// PostgresUser is the superuser of a throwaway cluster (trust
// authentication on loopback: no password).
const PostgresUser = "annex"

// PostgresBinDir finds PostgreSQL's server programs: the directory of
// initdb on PATH, else the newest /usr/lib/postgresql/*/bin (Debian puts
// them there, off PATH).
func PostgresBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL not found: no initdb on PATH nor in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// PostgresServer is a running throwaway PostgreSQL cluster.
type PostgresServer struct {
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Dir holds the cluster: data/ and the server's log, postgres.log.
	Dir string

	bin   string
	cred  *syscall.Credential
	fsync bool
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
}

// PostgresOptions tune StartPostgresWith. The zero value is a cluster tuned
// for tests: fsync off (the tests kill clients and the server, never the
// machine; a commit still writes its WAL to the kernel before it returns, so
// a killed server loses nothing).
type PostgresOptions struct {
	// Fsync keeps fsync on, for a comparison of write throughput.
	Fsync bool
}

// StartPostgres starts a throwaway cluster for the test and removes it when
// the test ends. It fails t when PostgreSQL is not installed.
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	return StartPostgresWith(t, PostgresOptions{})
}

// StartPostgresWith is StartPostgres with options.
func StartPostgresWith(t testing.TB, opts PostgresOptions) *PostgresServer {
	t.Helper()
	p, err := StartPostgresProcess(opts)
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Remove(); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	})
	return p
}

// StartPostgresProcess starts a throwaway cluster outside a test (the load
// tool); the caller calls Remove. As root (CI), initdb and postgres, which
// refuse to run as root, run as the user "postgres" that Debian's package
// creates.
func StartPostgresProcess(opts PostgresOptions) (*PostgresServer, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "annex-pg-")
	if err != nil {
		return nil, err
	}
	p := &PostgresServer{Dir: dir, bin: bin, fsync: opts.Fsync}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no user postgres to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	args := []string{"-D", p.dataDir(), "-U", PostgresUser, "--auth=trust", "-E", "UTF8", "--locale=C"}
	if !opts.Fsync {
		args = append(args, "--no-sync")
	}
	if out, err := p.command("initdb", args...).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var lastErr error
	for range 3 { // a free port may be taken between probe and bind
		if lastErr = p.start(); lastErr == nil {
			return p, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (p *PostgresServer) dataDir() string { return filepath.Join(p.Dir, "data") }

// LogFile is the server's log.
func (p *PostgresServer) LogFile() string { return filepath.Join(p.Dir, "postgres.log") }

// command is one of PostgreSQL's programs, run as the cluster's owner.
func (p *PostgresServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// start runs postgres on a free port (or the one it had: a restart keeps
// the DSNs handed out valid) and waits until it accepts connections.
func (p *PostgresServer) start() error {
	fresh := p.Port == 0
	if fresh {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		p.Port = ports[0]
	}
	logf, err := os.OpenFile(p.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	args := []string{"-D", p.dataDir(), "-p", strconv.Itoa(p.Port), "-k", p.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300",
		"-c", "shared_buffers=128MB", "-c", "log_min_messages=warning"}
	if !p.fsync {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	cmd := p.command("postgres", args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p.cmd, p.done, p.err = cmd, make(chan struct{}), nil
	done := p.done
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(done)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := p.command("pg_isready", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", PostgresUser, "-d", "postgres").CombinedOutput()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			if fresh {
				p.Port = 0 // the port may have been taken: another on retry
			}
			return fmt.Errorf("postgres exited: %v\n%s", p.err, tail(p.LogFile(), 4096))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Kill()
			return fmt.Errorf("postgres not ready after a minute: %s\n%s", bytes.TrimSpace(out), tail(p.LogFile(), 4096))
		}
	}
}

// DSN is the connection string of database db (the cluster has "postgres";
// CreateDatabase makes others), over TCP with the trusted superuser.
func (p *PostgresServer) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", PostgresUser, p.Port, db)
}

// CreateDatabase creates database name and returns its DSN.
func (p *PostgresServer) CreateDatabase(name string) (string, error) {
	if err := p.SQL("postgres", `CREATE DATABASE "`+name+`"`); err != nil {
		return "", err
	}
	return p.DSN(name), nil
}

// SQL runs one SQL command in database db with psql.
func (p *PostgresServer) SQL(db, sql string) error {
	out, err := p.command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port),
		"-U", PostgresUser, "-d", db, "-c", sql).CombinedOutput()
	if err != nil {
		return fmt.Errorf("psql %q: %v\n%s", sql, err, out)
	}
	return nil
}

// PID is the postmaster's process id.
func (p *PostgresServer) PID() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL to the postmaster and waits for it: a crash. Its
// backends notice and exit; Restart recovers from the WAL.
func (p *PostgresServer) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	// The backends of a killed postmaster exit once they notice; a new
	// postmaster refuses to start while they hold the shared memory.
	return nil
}

// Stop shuts the server down (fast shutdown: SIGINT), then SIGKILL after
// thirty seconds.
func (p *PostgresServer) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return errors.New("postgres did not stop on SIGINT within 30s")
}

// Restart stops the server if it runs and starts it again on the same port.
func (p *PostgresServer) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := p.start()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // old backends still exiting
	}
}

// Remove stops the server and deletes the cluster.
func (p *PostgresServer) Remove() error {
	err := p.Stop()
	if rerr := os.RemoveAll(p.Dir); err == nil {
		err = rerr
	}
	return err
}
