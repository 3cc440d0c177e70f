package redis

import (
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/publish.lua
	publishLua string
	//go:embed lua/history.lua
	historyLua string
	//go:embed lua/presence_common.lua
	presenceCommonLua string
	//go:embed lua/presence_add.lua
	presenceAddLua string
	//go:embed lua/presence_remove.lua
	presenceRemoveLua string
	//go:embed lua/presence_get.lua
	presenceGetLua string
)

// The scripts run by EVALSHA, falling back to EVAL (which loads them) when
// a Redis does not know them yet, after a restart for instance.
var (
	publishScript        = rueidis.NewLuaScript(publishLua)
	historyScript        = rueidis.NewLuaScript(historyLua)
	presenceAddScript    = rueidis.NewLuaScript(presenceCommonLua + presenceAddLua)
	presenceRemoveScript = rueidis.NewLuaScript(presenceCommonLua + presenceRemoveLua)
	presenceGetScript    = rueidis.NewLuaScript(presenceCommonLua + presenceGetLua)
)
