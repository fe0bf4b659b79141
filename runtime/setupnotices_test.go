package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetupNoticesTellAModelThatFellBack(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	rt := New(Config{Home: home, Provider: childProvider{}, Model: "m", Models: []string{"m", "gone"}})
	s, err := rt.NewSession(dir)
	require.NoError(t, err)
	require.NoError(t, s.SetModel("gone"))
	id := s.ID()
	rt.Close()

	rt2 := New(Config{Home: home, Provider: childProvider{}, Model: "m"}) // "gone" is no longer configured
	t.Cleanup(rt2.Close)
	s2, _, err := rt2.OpenSession(id, dir, nil)
	require.NoError(t, err)
	require.Equal(t, "m", s2.Model())
	var titles []string
	for _, n := range s2.SetupNotices() {
		if n.Source == "config" {
			titles = append(titles, n.Title)
		}
	}
	require.Equal(t, []string{`Model "gone" is not configured; the session uses "m"`}, titles)
}
