package fakegithub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// The Actions service's exception type names (the scaleset client maps
// some of them to its errors).
const (
	exScaleSetNotFound  = "GitHub.DistributedTask.WebApi.RunnerScaleSetNotFoundException"
	exScaleSetExists    = "GitHub.DistributedTask.WebApi.RunnerScaleSetExistsException"
	exGroupNotFound     = "GitHub.DistributedTask.WebApi.RunnerGroupNotFoundException"
	exAgentExists       = "GitHub.DistributedTask.WebApi.AgentExistsException"
	exJobStillRunning   = "GitHub.DistributedTask.WebApi.JobStillRunningException"
	exSessionNotFound   = "GitHub.DistributedTask.WebApi.TaskAgentSessionNotFoundException"
	exInvalidArgument   = "System.ArgumentException"
	exSessionExpired    = "GitHub.DistributedTask.WebApi.TaskAgentSessionExpiredException"
	maxMessagesPerBatch = 50
)

func (s *Server) actionsRoutes() {
	a := func(k kind, route string, h func(*call) reply, patterns ...string) {
		s.handle(s.actionsMux, k, route, h, patterns...)
	}
	a(kindActions, RouteScaleSets, s.listScaleSets)
	a(kindActions, RouteScaleSet, s.getScaleSet)
	a(kindActions, RouteCreateScaleSet, s.createScaleSet)
	a(kindActions, RouteUpdateScaleSet, s.updateScaleSet)
	a(kindActions, RouteDeleteScaleSet, s.deleteScaleSet)
	a(kindActions, RouteRunnerGroupByName, s.runnerGroupByName, RouteRunnerGroupByName, routeRunnerGroupsTrailing)
	a(kindActions, RouteScaleSetJITConfig, s.scaleSetJITConfig)
	a(kindActions, RouteAgent, s.getAgent)
	a(kindActions, RouteAgentByName, s.agentByName)
	a(kindActions, RouteDeleteAgent, s.deleteAgent)
	a(kindActions, RouteCreateSession, s.createSession)
	a(kindActions, RouteRefreshSession, s.refreshSession)
	a(kindActions, RouteDeleteSession, s.deleteSession)
	a(kindActions, RouteAcquireJobs, s.acquireJobs)
	a(kindQueue, RouteMessages, s.getMessage)
	a(kindQueue, RouteDeleteMessage, s.deleteMessage)
	a(kindRunnerAuth, RouteRunnerToken, s.runnerToken)
	a(kindRunner, RouteRunnerCreateSession, s.runnerCreateSession)
	a(kindRunner, RouteRunnerDeleteSession, s.runnerDeleteSession)
	a(kindRunner, RouteRunnerMessages, s.runnerMessages)
	a(kindRunner, RouteRunnerJobStart, s.runnerJobStart)
	a(kindRunner, RouteRunnerJobRenew, s.runnerJobRenew)
	a(kindRunner, RouteRunnerJobFinish, s.runnerJobFinish)
	a(kindActions, routeUnknownActions, func(*call) reply {
		return exception(http.StatusNotFound, exInvalidArgument, "no such Actions service route")
	}, "/")
}

type scaleSetJSON struct {
	ID                 int         `json:"id,omitempty"`
	Name               string      `json:"name,omitempty"`
	RunnerGroupID      int64       `json:"runnerGroupId,omitempty"`
	RunnerGroupName    string      `json:"runnerGroupName,omitempty"`
	Labels             []label     `json:"labels,omitempty"`
	RunnerSetting      setting     `json:"RunnerSetting"`
	CreatedOn          time.Time   `json:"createdOn"`
	RunnerJitConfigURL string      `json:"runnerJitConfigUrl,omitempty"`
	Statistics         *statistics `json:"statistics,omitempty"`
}

type setting struct {
	DisableUpdate bool `json:"disableUpdate,omitempty"`
}

func (s *Server) scaleSetJSON(ss *scaleSet) scaleSetJSON {
	st := s.stats(ss)
	out := scaleSetJSON{
		ID: ss.id, Name: ss.name, RunnerGroupID: ss.groupID, Labels: slices.Clone(ss.labels),
		RunnerSetting: setting{DisableUpdate: ss.disableUpdate}, CreatedOn: ss.createdOn.UTC(),
		RunnerJitConfigURL: s.actionsURL() + "_apis/runtime/runnerscalesets/" + strconv.Itoa(ss.id) + "/generatejitconfig",
		Statistics:         &st,
	}
	if g := s.groupByID(ss.scope, ss.groupID); g != nil {
		out.RunnerGroupName = g.name
	}
	return out
}

func (s *Server) scaleSetsIn(sc rm.Scope) []*scaleSet {
	var out []*scaleSet
	for _, id := range s.scaleSetIDs() {
		if ss := s.scaleSets[id]; scopeKey(ss.scope) == scopeKey(sc) {
			out = append(out, ss)
		}
	}
	return out
}

// pathScaleSet finds the path's {id} scale set in the caller's scope.
func (s *Server) pathScaleSet(c *call) (*scaleSet, reply) {
	id, err := strconv.Atoi(c.r.PathValue("id"))
	ss := s.scaleSets[id]
	if err != nil || ss == nil || scopeKey(ss.scope) != scopeKey(c.scope) {
		return nil, exception(http.StatusNotFound, exScaleSetNotFound, fmt.Sprintf("Runner scale set %s not found.", c.r.PathValue("id")))
	}
	return ss, reply{}
}

func (s *Server) listScaleSets(c *call) reply {
	q := c.r.URL.Query()
	group, _ := strconv.ParseInt(q.Get("runnerGroupId"), 10, 64)
	name := q.Get("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	value := []scaleSetJSON{}
	for _, ss := range s.scaleSetsIn(c.scope) {
		if (group == 0 || ss.groupID == group) && (name == "" || strings.EqualFold(ss.name, name)) {
			value = append(value, s.scaleSetJSON(ss))
		}
	}
	return jsonReply(http.StatusOK, map[string]any{"count": len(value), "value": value})
}

func (s *Server) getScaleSet(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	return jsonReply(http.StatusOK, s.scaleSetJSON(ss))
}

func decodeScaleSet(c *call) (scaleSetJSON, bool) {
	var in scaleSetJSON
	err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in)
	return in, err == nil
}

func (s *Server) createScaleSet(c *call) reply {
	in, ok := decodeScaleSet(c)
	if !ok || in.Name == "" {
		return exception(http.StatusBadRequest, exInvalidArgument, "A runner scale set needs a name.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.RunnerGroupID == 0 {
		in.RunnerGroupID = defaultGroup.id
	}
	if s.groupByID(c.scope, in.RunnerGroupID) == nil {
		return exception(http.StatusNotFound, exGroupNotFound, fmt.Sprintf("Runner group %d not found.", in.RunnerGroupID))
	}
	for _, ss := range s.scaleSetsIn(c.scope) {
		if strings.EqualFold(ss.name, in.Name) && ss.groupID == in.RunnerGroupID {
			return exception(http.StatusConflict, exScaleSetExists, fmt.Sprintf("A runner scale set named %s already exists.", in.Name))
		}
	}
	if len(in.Labels) == 0 {
		in.Labels = []label{{Type: "System", Name: in.Name}}
	}
	s.nextScaleSetID++
	ss := &scaleSet{
		id: s.nextScaleSetID, name: in.Name, scope: c.scope, groupID: in.RunnerGroupID, labels: in.Labels,
		disableUpdate: in.RunnerSetting.DisableUpdate, createdOn: s.now(),
	}
	s.scaleSets[ss.id] = ss
	s.changed()
	return jsonReply(http.StatusOK, s.scaleSetJSON(ss))
}

func (s *Server) updateScaleSet(c *call) reply {
	in, ok := decodeScaleSet(c)
	if !ok {
		return exception(http.StatusBadRequest, exInvalidArgument, "The body is not a runner scale set.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	if in.RunnerGroupID != 0 {
		if s.groupByID(ss.scope, in.RunnerGroupID) == nil {
			return exception(http.StatusNotFound, exGroupNotFound, fmt.Sprintf("Runner group %d not found.", in.RunnerGroupID))
		}
		ss.groupID = in.RunnerGroupID
	}
	if in.Name != "" {
		ss.name = in.Name
	}
	if len(in.Labels) > 0 {
		ss.labels = in.Labels
	}
	ss.disableUpdate = in.RunnerSetting.DisableUpdate
	s.changed()
	return jsonReply(http.StatusOK, s.scaleSetJSON(ss))
}

func (s *Server) deleteScaleSet(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	s.removeScaleSet(ss)
	s.changed()
	return reply{status: http.StatusNoContent}
}

// removeScaleSet deletes ss: its session, its idle runners; its jobs not
// yet started go back to the queue. s.mu is held; the caller calls changed.
func (s *Server) removeScaleSet(ss *scaleSet) {
	if ss.session != nil {
		s.dropSession(ss.session)
	}
	for _, j := range s.jobs {
		if j.rec.ScaleSetID == ss.id && (j.phase == phaseAcquired || j.phase == phaseAssigned) {
			j.phase, j.rec.ScaleSetID = phaseQueued, 0
			j.rec.AcquiredAt, j.rec.ScaleSetAssignedAt = time.Time{}, time.Time{}
		}
	}
	for _, r := range s.runners {
		if r.scaleSet == ss.id && !r.busy() {
			s.removeRunner(r)
		}
	}
	delete(s.scaleSets, ss.id)
}

func (s *Server) runnerGroupByName(c *call) reply {
	name := c.r.URL.Query().Get("groupName")
	s.mu.Lock()
	defer s.mu.Unlock()
	value := []map[string]any{}
	for _, g := range s.groupsOf(c.scope) {
		if name == "" || strings.EqualFold(g.name, name) {
			n := 0
			for _, r := range s.runnersIn(c.scope) {
				if r.groupID == g.id {
					n++
				}
			}
			value = append(value, map[string]any{"id": g.id, "name": g.name, "size": n, "isDefaultGroup": g.isDefault})
		}
	}
	return jsonReply(http.StatusOK, map[string]any{"count": len(value), "value": value})
}

type agentJSON struct {
	ID               int64   `json:"id"`
	Name             string  `json:"name"`
	RunnerScaleSetID int     `json:"runnerScaleSetId"`
	CreatedOn        string  `json:"createdOn"`
	RunnerGroupID    int64   `json:"runnerGroupId"`
	RunnerGroupName  string  `json:"runnerGroupName"`
	Version          string  `json:"version"`
	Enabled          bool    `json:"enabled"`
	Ephemeral        bool    `json:"ephemeral"`
	Status           string  `json:"status"`
	DisableUpdate    bool    `json:"disableUpdate"`
	Busy             bool    `json:"busy"`
	Labels           []label `json:"labels"`
}

func (s *Server) agentJSON(r *runner) agentJSON {
	out := agentJSON{
		ID: r.id, Name: r.name, RunnerScaleSetID: r.scaleSet, CreatedOn: r.createdAt.UTC().Format(time.RFC3339),
		RunnerGroupID: r.groupID, Version: r.version, Enabled: true, Ephemeral: r.ephemeral, Status: "offline",
		DisableUpdate: true, Busy: r.busy(), Labels: []label{},
	}
	if g := s.groupByID(r.scope, r.groupID); g != nil {
		out.RunnerGroupName = g.name
	}
	if s.online(r) {
		out.Status = "online"
	}
	for _, l := range r.labels {
		out.Labels = append(out.Labels, label{Type: "System", Name: l})
	}
	return out
}

func (s *Server) scaleSetJITConfig(c *call) reply {
	var in struct {
		Name       string `json:"name"`
		WorkFolder string `json:"workFolder"`
	}
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in); err != nil || strings.TrimSpace(in.Name) == "" {
		return exception(http.StatusBadRequest, exInvalidArgument, "A JIT runner needs a name.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	if s.nameTaken(ss.scope, in.Name) {
		return exception(http.StatusConflict, exAgentExists, fmt.Sprintf("Agent exists with name %s in pool %d.", in.Name, ss.id))
	}
	labels := make([]string, 0, len(ss.labels))
	for _, l := range ss.labels {
		labels = append(labels, l.Name)
	}
	r, encoded := s.newRunner(ss.scope, in.Name, ss.groupID, labels, ss.id, in.WorkFolder)
	s.ledger.note(CredJITConfig, encoded)
	s.changed()
	return jsonReply(http.StatusOK, map[string]any{
		"runner":           map[string]any{"id": r.id, "name": r.name, "runnerScaleSetId": ss.id},
		"encodedJITConfig": encoded,
	})
}

func (s *Server) agentOf(c *call) (*runner, reply) {
	id, err := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	r := s.runners[id]
	if err != nil || r == nil || scopeKey(r.scope) != scopeKey(c.scope) {
		return nil, exception(http.StatusNotFound, runnerproto.ExAgentNotFound, fmt.Sprintf("Agent %s not found.", c.r.PathValue("id")))
	}
	return r, reply{}
}

func (s *Server) getAgent(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rep := s.agentOf(c)
	if r == nil {
		return rep
	}
	return jsonReply(http.StatusOK, s.agentJSON(r))
}

func (s *Server) agentByName(c *call) reply {
	name := c.r.URL.Query().Get("agentName")
	s.mu.Lock()
	defer s.mu.Unlock()
	value := []agentJSON{}
	for _, r := range s.runnersIn(c.scope) {
		if name == "" || strings.EqualFold(r.name, name) {
			value = append(value, s.agentJSON(r))
		}
	}
	return jsonReply(http.StatusOK, map[string]any{"count": len(value), "value": value})
}

func (s *Server) deleteAgent(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rep := s.agentOf(c)
	if r == nil {
		return rep
	}
	if r.busy() {
		return exception(http.StatusBadRequest, exJobStillRunning, fmt.Sprintf("Agent %s is still running a job.", r.name))
	}
	s.removeRunner(r)
	s.changed()
	return reply{status: http.StatusNoContent}
}

type sessionJSON struct {
	SessionID               string       `json:"sessionId"`
	OwnerName               string       `json:"ownerName"`
	RunnerScaleSet          scaleSetJSON `json:"runnerScaleSet"`
	MessageQueueURL         string       `json:"messageQueueUrl"`
	MessageQueueAccessToken string       `json:"messageQueueAccessToken"`
	Statistics              statistics   `json:"statistics"`
}

func (s *Server) sessionJSON(se *ssSession) sessionJSON {
	return sessionJSON{
		SessionID: se.id, OwnerName: se.owner, RunnerScaleSet: s.scaleSetJSON(se.ss),
		MessageQueueURL:         s.actionsURL() + "_apis/runtime/runnerscalesets/" + strconv.Itoa(se.ss.id) + "/sessions/" + se.id + "/messages",
		MessageQueueAccessToken: se.queueToken, Statistics: s.stats(se.ss),
	}
}

func (s *Server) newQueueToken(se *ssSession) {
	delete(s.queueTokens, se.queueToken)
	se.queueToken = randomToken("mq_")
	se.tokenExpires = s.now().Add(s.cfg.queueTokenLifetime)
	s.queueTokens[se.queueToken] = se
	s.ledger.note(CredQueueToken, se.queueToken)
}

func (s *Server) createSession(c *call) reply {
	var in struct {
		OwnerName string `json:"ownerName"`
	}
	_ = json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	if se := s.sessionOf(ss); se != nil {
		return exception(http.StatusConflict, runnerproto.ExSessionConflict,
			fmt.Sprintf("The actions runner scale set %s already has an active session for owner %s.", ss.name, se.owner))
	}
	se := &ssSession{id: uuid.NewString(), ss: ss, owner: in.OwnerName, lastActive: s.now(), nextMsgID: 1}
	s.newQueueToken(se)
	ss.session = se
	s.sessions[se.id] = se
	for _, j := range s.jobs {
		if !s.svc.direct && j.phase == phaseQueued && s.matchesScaleSet(j, ss) {
			s.emit(ss.id, "JobAvailable", j)
		}
	}
	s.changed()
	if s.svc.cutCreate > 0 {
		s.svc.cutCreate--
		return reply{drop: true}
	}
	return jsonReply(http.StatusOK, s.sessionAnswer(se))
}

// sessionAnswer is a session create's or refresh's answer, without its
// queue URL while SetEmptyQueueURL holds.
func (s *Server) sessionAnswer(se *ssSession) sessionJSON {
	out := s.sessionJSON(se)
	if s.svc.emptyQueueURL > 0 {
		s.svc.emptyQueueURL--
		out.MessageQueueURL = ""
	}
	return out
}

// pathSession finds the path's {session} of the path's scale set.
func (s *Server) pathSession(c *call) (*ssSession, reply) {
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return nil, rep
	}
	se := s.sessions[c.r.PathValue("session")]
	if se == nil || se.ss != ss || s.sessionOf(ss) != se {
		return nil, exception(http.StatusNotFound, exSessionNotFound, "The message session was not found.")
	}
	return se, reply{}
}

func (s *Server) refreshSession(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, rep := s.pathSession(c)
	if se == nil {
		return rep
	}
	s.newQueueToken(se)
	se.lastActive = s.now()
	return jsonReply(http.StatusOK, s.sessionAnswer(se))
}

func (s *Server) deleteSession(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, rep := s.pathSession(c)
	if se == nil {
		return rep
	}
	s.dropSession(se)
	s.changed()
	return reply{status: http.StatusNoContent}
}

func (s *Server) acquireJobs(c *call) reply {
	var ids []int64
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&ids); err != nil {
		return exception(http.StatusBadRequest, exInvalidArgument, "The body is not a list of runner request ids.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, rep := s.pathScaleSet(c)
	if ss == nil {
		return rep
	}
	if s.svc.direct {
		return directAcquireReply()
	}
	acquired := []int64{}
	for _, j := range s.jobs {
		if j.phase == phaseQueued && slices.Contains(ids, j.rec.RequestID) && s.matchesScaleSet(j, ss) {
			j.phase = phaseAcquired
			j.rec.ScaleSetID = ss.id
			j.rec.AcquiredAt = s.now()
			acquired = append(acquired, j.rec.RequestID)
		}
	}
	s.changed()
	return jsonReply(http.StatusOK, map[string]any{"count": len(acquired), "value": acquired})
}

// queueSession checks the queue URL names the token's session.
func (s *Server) queueSession(c *call) (*ssSession, reply) {
	se := c.session
	if strconv.Itoa(se.ss.id) != c.r.PathValue("id") || se.id != c.r.PathValue("session") || s.sessions[se.id] != se {
		return nil, exception(http.StatusNotFound, exSessionNotFound, "The message session was not found.")
	}
	return se, reply{}
}

// getMessage long-polls the message queue: 200 with a batch of job
// messages (the unacknowledged one again, if lastMessageId does not cover
// it), or 202 after the poll timeout.
func (s *Server) getMessage(c *call) reply {
	last, _ := strconv.Atoi(c.r.URL.Query().Get("lastMessageId"))
	timer := time.NewTimer(s.cfg.pollTimeout)
	defer timer.Stop()
	s.mu.Lock()
	se, rep := s.queueSession(c)
	if se == nil {
		s.mu.Unlock()
		return rep
	}
	if v := c.r.Header.Get("X-ScaleSetMaxCapacity"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			se.ss.maxCapacity = n
			s.changed()
		}
	}
	se.polling++
	defer func() {
		s.mu.Lock()
		se.polling--
		se.lastActive = s.now()
		s.mu.Unlock()
	}()
	tok := bearer(c.r, "Bearer")
	for {
		// The token first: a session the service dropped took its token
		// with it, so its poll answers 401 and the client's refresh then
		// 404s (actions/scaleset session_client.go GetMessage refreshes on
		// 401; #123 is about that refresh's 404).
		if s.queueTokens[tok] != se {
			s.mu.Unlock() // revoked, dropped, or replaced by a refresh
			return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The message queue token expired.")
		}
		if s.sessions[se.id] != se {
			s.mu.Unlock()
			return exception(http.StatusNotFound, exSessionNotFound, "The message session was deleted.")
		}
		if se.outstanding != nil && se.outstanding.id <= last {
			se.outstanding = nil // lastMessageId acknowledges it
		}
		if se.outstanding == nil && len(se.pending) > 0 {
			n := min(len(se.pending), maxMessagesPerBatch)
			batch, _ := json.Marshal(se.pending[:n])
			se.pending = slices.Delete(se.pending, 0, n)
			se.outstanding = &ssMessage{id: se.nextMsgID, body: string(batch)}
			se.nextMsgID++
		}
		if m := se.outstanding; m != nil {
			st := s.stats(se.ss)
			s.mu.Unlock()
			return jsonReply(http.StatusOK, map[string]any{
				"messageId": m.id, "messageType": "RunnerScaleSetJobMessages", "body": m.body, "statistics": st,
			})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			return reply{status: http.StatusAccepted}
		case <-c.r.Context().Done():
			return reply{status: http.StatusAccepted}
		case <-s.closed:
			return reply{status: http.StatusAccepted}
		}
		s.mu.Lock()
	}
}

func (s *Server) deleteMessage(c *call) reply {
	id, err := strconv.Atoi(c.r.PathValue("message"))
	if err != nil {
		return exception(http.StatusBadRequest, exInvalidArgument, "The message id is not a number.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, rep := s.queueSession(c)
	if se == nil {
		return rep
	}
	if se.outstanding != nil && se.outstanding.id == id {
		se.outstanding = nil
		s.changed()
	}
	se.lastActive = s.now()
	return reply{status: http.StatusNoContent}
}
