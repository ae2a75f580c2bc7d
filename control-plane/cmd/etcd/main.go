// Command etcd runs one embedded etcd member on loopback for the tests' control plane:
// a data directory and a client URL, nothing else (no peers, no TLS), and optionally no fsync.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory of the member's data (required)")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:2379", "URL clients connect to")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:2380", "URL of the (only) member for peers")
	noFsync := flag.Bool("unsafe-no-fsync", false, "never fsync the write-ahead log (data may be lost on a power cut: tests only)")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("--listen-client-url: %v", err)
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("--listen-peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "warn"
	cfg.UnsafeNoFsync = *noFsync
	// Compaction as a cluster's: watches of long-running tests meet 410 Gone as they would.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("starting etcd: %v", err)
	}
	defer e.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd ready at %s", client)
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
	select {
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	case <-stop:
	}
}
