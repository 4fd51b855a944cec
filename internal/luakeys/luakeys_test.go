package luakeys_test

import (
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// TestDeclaredKeysGuard: in a test binary a script that touches only its
// KEYS runs as before (with a shebang line, and through pcall too); one
// that touches a key it built in Lua, or calls a command the guard does not
// know, fails naming the key or the command.
func TestDeclaredKeysGuard(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := t.Context()
	k1, k2 := prefix+":a", prefix+":b"

	ok := luakeys.NewScript("#!lua flags=allow-oom\n" + `
redis.call('HSET', KEYS[1], 'f', ARGV[1])
redis.pcall('ZADD', KEYS[2], 1, 'm')
redis.call('DEL', KEYS[1], KEYS[2])
local t = redis.call('TIME')
return redis.status_reply('OK')`)
	if err := ok.Run(ctx, rdb, []string{k1, k2}, "v").Err(); err != nil {
		t.Fatalf("a script touching only its KEYS: %v", err)
	}

	for _, tc := range []struct{ name, src, says string }{
		{"built key", `return redis.call('HGET', KEYS[1] .. ':x', 'f')`, "HGET touches key " + k1 + ":x, which the script does not declare"},
		{"second key of DEL", `return redis.call('DEL', KEYS[1], KEYS[1] .. 'z')`, "DEL touches key " + k1 + "z"},
		{"through pcall", `return redis.pcall('ZSCORE', 'elsewhere', 'm')`, "ZSCORE touches key elsewhere"},
		{"unknown command", `return redis.call('SINTERSTORE', KEYS[1], KEYS[1])`, "SINTERSTORE is not in the key guard's table"},
	} {
		err := luakeys.NewScript(tc.src).Run(ctx, rdb, []string{k1}).Err()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.says)
		}
	}
	if g := luakeys.Guard("#!lua\nreturn 1"); !strings.HasPrefix(g, "#!lua\nlocal __redis") || !strings.HasSuffix(g, "return 1") {
		t.Errorf("Guard does not keep the shebang first:\n%s", g)
	}
}
