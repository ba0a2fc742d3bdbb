package http

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestMain puts gin in release mode, as the service's main does: gin's
// debug mode would print every route of every server the tests build.
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	os.Exit(m.Run())
}
