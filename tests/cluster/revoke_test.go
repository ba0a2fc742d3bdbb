package cluster

import (
	"testing"
	"time"
)

// TestClusterTokenRevocation: two real nodes (automanaged membership). A
// user's token, used on both nodes so that both cache it, is revoked
// through one node; the very next request with it, on the other node and on
// the revoking one, is 401, and the revocation answered before the token
// cache's lifetime (2 s) could have expired the other node's entry: the
// other node dropped it because it was told (http/usertokens.go,
// forgetEverywhere). Rounds alternate the revoking node, by id and by
// "current".
func TestClusterTokenRevocation(t *testing.T) {
	s := newStack(t, automanaged, 2)
	for round := range 4 {
		revoker, other := s.nodes[round%2], s.nodes[(round+1)%2]
		r, err := revoker.post("/users", "POST", s.token, "", map[string]any{"auth": true})
		if err != nil || r.Status != 201 {
			t.Fatalf("round %d: create user: %d %s %v", round, r.Status, r.Raw, err)
		}
		userID, token := r.Data()["id"].(string), r.Data()["token"].(string)
		// Both nodes cache the token now (for 2 s from here).
		for _, n := range []*node{other, revoker} {
			if r, err := n.get("/users/me", token); err != nil || r.Status != 200 {
				t.Fatalf("round %d: GET /users/me on %s: %d %v", round, n.name, r.Status, err)
			}
		}
		path := "/users/" + userID + "/tokens/current"
		caller := token
		if round%2 == 1 { // the operator revokes it by id
			r, err := revoker.get("/users/"+userID+"/tokens", s.token)
			if err != nil || r.Status != 200 {
				t.Fatalf("round %d: list tokens: %d %s %v", round, r.Status, r.Raw, err)
			}
			list, _ := r.Body["data"].([]any)
			if len(list) != 1 {
				t.Fatalf("round %d: tokens = %s, want one", round, r.Raw)
			}
			path, caller = "/users/"+userID+"/tokens/"+list[0].(map[string]any)["id"].(string), s.token
		}
		began := time.Now()
		r, err = revoker.do("DELETE", path, caller, "", nil)
		took := time.Since(began)
		if err != nil || r.Status != 200 {
			t.Fatalf("round %d: DELETE %s on %s: %d %s %v", round, path, revoker.name, r.Status, r.Raw, err)
		}
		if current := r.Data()["current"] == true; current != (round%2 == 0) {
			t.Errorf("round %d: answer %s: current should be %v", round, r.Raw, round%2 == 0)
		}
		for _, n := range []*node{other, revoker} {
			if r, err := n.get("/users/me", token); err != nil || r.Status != 401 {
				t.Fatalf("round %d: the revoked token on %s right after the DELETE answered: %d %s %v; want 401",
					round, n.name, r.Status, r.Raw, err)
			}
		}
		if took > time.Second {
			t.Errorf("round %d: the revocation took %s: the other node did not acknowledge (the answer waited for its cache to expire)", round, took)
		}
		t.Logf("round %d: revoked through %s in %s", round, revoker.name, took.Round(time.Millisecond))
	}
}
