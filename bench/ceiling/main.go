// Command ceiling is a benchmark-only HTTP server: a bare gin handler for
// POST /tokens/:contractId/transfers that decodes the same JSON body as the
// service, validates it with the service's own functions (engine.ParseAddress,
// engine.ParseAmount) and answers 202 with a canned body, storing and
// messaging nothing. Its accept rate is the HTTP ceiling that `make bench`
// compares the service with. It prints "listening on <url>" once ready.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// transferRequest mirrors the body of the service's transfer route.
type transferRequest struct {
	To           *string  `json:"to"`
	Value        *string  `json:"value"`
	From         *string  `json:"from"`
	Callbacks    []string `json:"callbacks"`
	WaitForAsset *string  `json:"waitForAsset"`
	WaitForValue *string  `json:"waitForValue"`
	DependsOn    []string `json:"dependsOn"`
	WaitTimeout  *int64   `json:"waitTimeout"`
}

// canned is the 202 body: shaped like the service's answer.
var canned = []byte(`{"data":{"id":"00000000-0000-4000-8000-000000000000","type":"transaction","from":"0x0000000000000000000000000000000000000000","method":"transfer","status":"new","network":"dev"}}`)

// handler returns the gin engine of the ceiling server.
func handler() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// The two reads txload makes before it sends (its token, its sender).
	r.GET("/tokens", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(`{"data":[{"id":"00000000-0000-4000-8000-0000000000c0","network":"dev","address":"0x0000000000000000000000000000000000000001"}]}`))
	})
	r.GET("/accounts/default", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(`{"data":{"id":"00000000-0000-4000-8000-000000000001","address":"0x0000000000000000000000000000000000000002"}}`))
	})
	r.POST("/tokens/:contractId/transfers", func(c *gin.Context) {
		var req transferRequest
		dec := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": gin.H{"code": "invalid_json", "message": err.Error()}})
			return
		}
		if req.To == nil || req.Value == nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": gin.H{"code": "invalid_argument", "message": "to and value are required"}})
			return
		}
		if _, err := engine.ParseAddress("to", *req.To); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": gin.H{"code": "invalid_argument", "message": err.Error()}})
			return
		}
		if _, err := engine.ParseAmount("value", *req.Value); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": gin.H{"code": "invalid_argument", "message": err.Error()}})
			return
		}
		c.Data(http.StatusAccepted, "application/json; charset=utf-8", canned)
	})
	return r
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ceiling: listen: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", l.Addr())
	if err := http.Serve(l, handler()); err != nil {
		fmt.Fprintf(os.Stderr, "ceiling: serve: %v\n", err)
		os.Exit(1)
	}
}
