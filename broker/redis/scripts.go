package redis

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/publish.lua
	publishLua string
	//go:embed lua/history.lua
	historyLua string
	//go:embed lua/stream_common.lua
	streamCommonLua string
	//go:embed lua/presence_common.lua
	presenceCommonLua string
	//go:embed lua/presence_add.lua
	presenceAddLua string
	//go:embed lua/presence_remove.lua
	presenceRemoveLua string
	//go:embed lua/presence_get.lua
	presenceGetLua string
	//go:embed lua/map_common.lua
	mapCommonLua string
	//go:embed lua/map_publish.lua
	mapPublishLua string
	//go:embed lua/map_expire.lua
	mapExpireLua string
	//go:embed lua/map_due.lua
	mapDueLua string
	//go:embed lua/map_state.lua
	mapStateLua string
	//go:embed lua/map_stream.lua
	mapStreamLua string
	//go:embed lua/map_clear.lua
	mapClearLua string
)

// The scripts run by EVALSHA, falling back to EVAL (which loads them) when
// a Redis does not know them yet, after a restart for instance.
var (
	historyScript        = rueidis.NewLuaScript(streamCommonLua + historyLua)
	presenceAddScript    = rueidis.NewLuaScript(presenceCommonLua + presenceAddLua)
	presenceRemoveScript = rueidis.NewLuaScript(presenceCommonLua + presenceRemoveLua)
	presenceGetScript    = rueidis.NewLuaScript(presenceCommonLua + presenceGetLua)

	mapPublishScript = rueidis.NewLuaScript(streamCommonLua + mapCommonLua + mapPublishLua)
	mapStateScript   = rueidis.NewLuaScript(streamCommonLua + mapCommonLua + mapStateLua)
	mapStreamScript  = rueidis.NewLuaScript(streamCommonLua + mapCommonLua + mapStreamLua)
	mapClearScript   = rueidis.NewLuaScript(streamCommonLua + mapCommonLua + mapClearLua)
	mapDueScript     = rueidis.NewLuaScript(mapDueLua)
)

// mapExpireScript runs pipelined, one call per channel whose keys are due.
var mapExpireScript = newPipelinedScript(streamCommonLua + mapCommonLua + mapExpireLua)

// publishScript is run pipelined (PublishMany), with commands built here:
// rueidis's own pipelined form loads the script into every server before
// each pipeline, a round trip more.
var publishScript = newPipelinedScript(streamCommonLua + publishLua)

// pipelinedScript is a script sent by EVALSHA in pipelines, or by EVAL
// when a Redis does not know it.
type pipelinedScript struct {
	body string
	sha  string
}

func newPipelinedScript(body string) *pipelinedScript {
	sum := sha1.Sum([]byte(body))
	return &pipelinedScript{body: body, sha: hex.EncodeToString(sum[:])}
}

// cmd is one call of the script; withBody sends the script itself (EVAL),
// which also makes Redis cache it for the EVALSHAs after.
func (s *pipelinedScript) cmd(c rueidis.Client, keys, args []string, withBody bool) rueidis.Completed {
	if withBody {
		return c.B().Eval().Script(s.body).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}
